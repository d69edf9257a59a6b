#include "otel_config.h"

#include <fstream>
#include <sstream>

#include <kuscia_model/kuscia.h>

namespace kuscia_host::plugins::otel {

namespace {

// RFC 7230 token characters: what a header name may hold.
bool isHeaderName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

bool isHeaderValue(std::string_view s) {
  for (char c : s)
    if (c == '\r' || c == '\n' || c == '\0') return false;
  return true;
}

std::string trimmed(std::string s) {
  auto notSpace = [](char c) { return c != ' ' && c != '\t' && c != '\r' && c != '\n'; };
  while (!s.empty() && !notSpace(s.back()))
    s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && !notSpace(s[i]))
    ++i;
  return s.substr(i);
}

// A port's digits; -1 when they are not one.
int64_t portOf(std::string_view digits) {
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos)
    return -1;
  return std::stoll(std::string(digits));
}

} // namespace

Endpoint parseEndpoint(const std::string& url, std::string& error) {
  Endpoint e;
  e.url = url;
  std::string_view rest = url;
  if (rest.substr(0, 7) == "http://") {
    rest.remove_prefix(7);
  } else if (rest.substr(0, 8) == "https://") {
    rest.remove_prefix(8);
    e.tls = true;
  } else {
    error = "'" + url + "' is not an http:// or https:// URL";
    return {};
  }
  auto slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    error = "'" + url + "': credentials go in headers or headerFiles, not in the URL";
    return {};
  }
  std::string_view host = authority;
  int64_t port = e.tls ? 443 : 80;
  if (!authority.empty() && authority.front() == '[') { // [v6]:port
    auto close = authority.find(']');
    if (close == std::string_view::npos) {
      error = "'" + url + "': unterminated IPv6 address";
      return {};
    }
    host = authority.substr(1, close - 1);
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() != ':') {
      error = "'" + url + "': junk after the IPv6 address";
      return {};
    }
    if (!authority.empty()) port = portOf(authority.substr(1));
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = portOf(authority.substr(colon + 1));
  }
  if (host.empty()) {
    error = "'" + url + "' has no host";
    return {};
  }
  if (port <= 0 || port > 65535) {
    error = "'" + url + "' has no valid port";
    return {};
  }
  if (path.find('#') != std::string_view::npos) {
    error = "'" + url + "': a fragment has no meaning here";
    return {};
  }
  e.host = std::string(host);
  e.port = static_cast<uint16_t>(port);
  // As the OTLP exporter specification says of a signal-less endpoint: /v1/traces when the URL has
  // no path; a path given is used as is.
  e.target = path.empty() || path == "/" ? "/v1/traces" : std::string(path);
  if (e.target.front() == '?') e.target = "/v1/traces" + e.target;
  return e;
}

const std::vector<sdk::ConfigKey>& otelConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      {"endpoint", "string", "(required)",
       "the OTLP/HTTP receiver: http(s)://host[:port][/path]; /v1/traces is appended when the "
       "URL has no path (a Collector's 4318, Jaeger's 4318, Tempo's 4318)"},
      {"encoding", "string", "protobuf",
       "'protobuf' (application/x-protobuf) or 'json' (application/json)"},
      {"compression", "string", "gzip", "'gzip' or 'none'"},
      {"headers", "mapping of strings", "{}",
       "extra request headers, {name: value} (values are never logged)"},
      {"headerFiles", "mapping of strings", "{}",
       "extra request headers read from files at start, {name: path} (for a token: "
       "{Authorization: /etc/kuscia-host/otlp-token} holding 'Bearer ...')"},
      {"caFile", "string", "(system roots)", "PEM CA bundle that verifies an https endpoint"},
      {"timeoutMillis", "integer", "10000", "one request's time limit (100..600000)"},
      {"batchMaxSpans", "integer", "512", "most spans in one request (1..100000)"},
      {"batchDelayMillis", "integer", "2000",
       "longest a span waits for its batch to fill (0..600000)"},
      {"queueMaxSpans", "integer", "4096",
       "spans held while the receiver is slow or down; beyond it the oldest are dropped and "
       "counted (1..1000000)"},
      {"retryInitialMillis", "integer", "1000",
       "first wait before a retry (429, 502, 503, 504, no connection, timeout); doubles each "
       "time; a Retry-After header is honoured (10..600000)"},
      {"retryMaxMillis", "integer", "30000", "longest wait between retries (10..3600000)"},
      {"retryGiveUpSeconds", "integer", "300",
       "a batch still failing after this long is counted failed and dropped (1..86400)"},
      {"stuckAfterSeconds", "integer", "300",
       "a task not ready yet exports what ended and its pending phase once that phase has "
       "waited this long (1..86400)"},
      {"resendWindowSeconds", "integer", "600",
       "a task found already started when the host starts is exported again (same ids) when "
       "its startup ended less than this long ago; older ones are history (0..604800)"},
      {"serviceName", "string", "kuscia-host", "the resource's service.name"},
      model::taskNamespaceKey(),
  };
  return keys;
}

OtelConfig parseOtelConfig(std::string_view json) {
  sdk::ConfigReader r(json, otelConfigKeys());
  OtelConfig c;
  std::string url = r.string("endpoint", "");
  if (url.empty())
    throw sdk::ConfigError("endpoint", "config key 'endpoint' is required: the OTLP/HTTP "
                                       "receiver's URL, e.g. http://127.0.0.1:4318");
  std::string error;
  c.endpoint = parseEndpoint(url, error);
  if (c.endpoint.host.empty())
    throw sdk::ConfigError("endpoint", "config key 'endpoint': " + error);
  c.json = r.oneOf("encoding", "protobuf", {"protobuf", "json"}) == "json";
  c.gzip = r.oneOf("compression", "gzip", {"gzip", "none"}) == "gzip";
  for (const auto& [name, value] : r.stringMap("headers")) {
    if (!isHeaderName(name))
      throw sdk::ConfigError("headers",
                             "config key 'headers': '" + name + "' is not a header name");
    if (!isHeaderValue(value))
      throw sdk::ConfigError("headers", "config key 'headers': the value of '" + name +
                                            "' holds a line break");
    c.headers.emplace_back(name, value);
  }
  for (const auto& [name, path] : r.stringMap("headerFiles")) {
    if (!isHeaderName(name))
      throw sdk::ConfigError("headerFiles",
                             "config key 'headerFiles': '" + name + "' is not a header name");
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in)
      throw sdk::ConfigError("headerFiles",
                             "config key 'headerFiles': " + name + ": cannot read " + path);
    std::string value = trimmed(text.str());
    if (value.empty() || !isHeaderValue(value))
      throw sdk::ConfigError("headerFiles", "config key 'headerFiles': " + name + ": " + path +
                                                " must hold one line, the header's value");
    c.headers.emplace_back(name, value);
  }
  c.caFile = r.string("caFile", "");
  if (!c.caFile.empty()) {
    if (!c.endpoint.tls)
      throw sdk::ConfigError("caFile", "config key 'caFile': the endpoint is not https");
    std::ifstream in(c.caFile);
    if (!in) throw sdk::ConfigError("caFile", "config key 'caFile': cannot read " + c.caFile);
  }
  c.timeoutMillis = r.integer("timeoutMillis", c.timeoutMillis, 100, 600000);
  c.batchMaxSpans = r.integer("batchMaxSpans", c.batchMaxSpans, 1, 100000);
  c.batchDelayMillis = r.integer("batchDelayMillis", c.batchDelayMillis, 0, 600000);
  c.queueMaxSpans = r.integer("queueMaxSpans", c.queueMaxSpans, 1, 1000000);
  c.retryInitialMillis = r.integer("retryInitialMillis", c.retryInitialMillis, 10, 600000);
  c.retryMaxMillis = r.integer("retryMaxMillis", c.retryMaxMillis, 10, 3600000);
  if (c.retryMaxMillis < c.retryInitialMillis)
    throw sdk::ConfigError("retryMaxMillis",
                           "config key 'retryMaxMillis': must not be below retryInitialMillis");
  c.retryGiveUpSeconds = r.integer("retryGiveUpSeconds", c.retryGiveUpSeconds, 1, 86400);
  c.stuckAfterSeconds = r.integer("stuckAfterSeconds", c.stuckAfterSeconds, 1, 86400);
  c.resendWindowSeconds = r.integer("resendWindowSeconds", c.resendWindowSeconds, 0, 604800);
  c.serviceName = r.string("serviceName", c.serviceName);
  if (c.serviceName.empty())
    throw sdk::ConfigError("serviceName", "config key 'serviceName': must not be empty");
  c.taskNamespace = model::readTaskNamespace(r);
  return c;
}

} // namespace kuscia_host::plugins::otel
