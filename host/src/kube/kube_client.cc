#include "kube/kube_client.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <simdjson.h>
#include <string_view>

#include "apimachinery/paths.h"
#include "apimachinery/status.h"

namespace kuscia_host::kube {

using nlohmann::json;

namespace {

// Whether a plugin's body is JSON. simdjson's validation first (every status write and annotation
// passes here, and nlohmann's lexer cost about as much as the rest of the write path); what it
// refuses is judged by nlohmann, whose answer stands (simdjson also refuses valid JSON it cannot
// represent, such as integers beyond 64 bits).
bool isJson(const std::string& body) {
  // One parser and one padded copy per thread, reused (a copy allocated for each write cost a
  // tenth of the check).
  thread_local simdjson::dom::parser parser;
  thread_local std::string padded;
  padded.assign(body);
  padded.resize(body.size() + simdjson::SIMDJSON_PADDING);
  if (parser.parse(padded.data(), body.size(), false).error() == simdjson::SUCCESS) return true;
  return json::accept(body);
}

// A merge patch's text with metadata.resourceVersion spliced in, when that is plainly safe: the
// text begins {"metadata":{ (as the bundled plugins write it), has no escape and names no
// resourceVersion anywhere, and the version needs no escaping. Otherwise nullopt: the patch is
// parsed and dumped again (about 17 thousand instructions a write, which this spares
// gateway-ready-time's annotations).
std::optional<std::string> withResourceVersion(const std::string& body,
                                               const std::string& resourceVersion) {
  constexpr std::string_view kStart = R"({"metadata":{)";
  if (body.compare(0, kStart.size(), kStart) != 0 || body.size() <= kStart.size() ||
      body.find('\\') != std::string::npos ||
      body.find("\"resourceVersion\"") != std::string::npos || resourceVersion.empty())
    return std::nullopt;
  for (char c : resourceVersion)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '.' && c != '_')
      return std::nullopt;
  const bool empty = body[kStart.size()] == '}';
  std::string out;
  out.reserve(body.size() + resourceVersion.size() + 24);
  out.append(kStart)
      .append(R"("resourceVersion":")")
      .append(resourceVersion)
      .append(empty ? "\"" : "\",")
      .append(body, kStart.size());
  return out;
}

} // namespace

Result<std::unique_ptr<KubeClient>> KubeClient::create(boost::asio::io_context& io,
                                                       const ClusterAccess& access,
                                                       KubeClientOptions options,
                                                       const Clock& clock, MetricsRegistry& metrics,
                                                       std::shared_ptr<spdlog::logger> logger) {
  auto transport = BeastHttpClient::create(io, access);
  if (!transport) return makeError(transport.error());
  return std::make_unique<KubeClient>(io, transport.value(), options, clock, metrics,
                                      std::move(logger));
}

KubeClient::KubeClient(boost::asio::io_context& io, std::shared_ptr<HttpTransport> transport,
                       KubeClientOptions options, const Clock& clock, MetricsRegistry& metrics,
                       std::shared_ptr<spdlog::logger> logger)
    : io_(io), clock_(clock), options_(options), logger_(std::move(logger)), metrics_(metrics),
      api_(std::make_shared<ApiClient>(io, std::move(transport), options.qps, options.burst, clock,
                                       metrics_, logger_)) {}

KubeClient::~KubeClient() {
  // stop() posts to each informer's strand, which allocates; a destructor must not throw, and
  // what could not be posted is cancelled with the io_context anyway.
  try {
    stop();
  } catch (...) { // NOLINT(bugprone-empty-catch): see above
  }
}

Result<uint64_t> KubeClient::subscribe(SubscriptionSpec spec, Subscription::Sink sink) {
  if (spec.version.empty() || spec.resource.empty())
    return makeError("subscription needs a version and a resource");
  if (const std::string* bad = apimachinery::badPathSegment(
          {&spec.group, &spec.version, &spec.resource, &spec.namespaceName}))
    return makeError("subscription: '" + *bad +
                     "' is not a valid group, version, resource or namespace name");
  if (auto sel = apimachinery::LabelSelector::parse(spec.labelSelector); !sel)
    return makeError("label selector '" + spec.labelSelector + "': " + sel.error());
  FieldPaths check;
  for (const auto& f : spec.fields)
    if (auto slot = check.add(f); !slot) return makeError(slot.error());
  std::lock_guard lock(mu_);
  if (started_) return makeError("subscriptions are only accepted before the informers start");
  uint64_t id = ++nextId_;
  pending_.push_back(Pending{id, std::move(spec), std::move(sink)});
  return id;
}

void KubeClient::start(HealthRegistry& health) {
  std::lock_guard lock(mu_);
  if (started_) return;
  started_ = true;
  // One informer per resource: namespaced when all its subscribers share one namespace.
  std::map<std::string, std::set<std::string>> namespaces;
  auto gvr = [](const SubscriptionSpec& s) { return s.group + "/" + s.version + "/" + s.resource; };
  for (const auto& p : pending_)
    namespaces[gvr(p.spec)].insert(p.spec.namespaceName);
  std::map<std::string, std::shared_ptr<Informer>> byResource;
  for (auto& p : pending_) {
    auto& inf = byResource[gvr(p.spec)];
    if (!inf) {
      const auto& ns = namespaces[gvr(p.spec)];
      std::string scope = ns.size() == 1 ? *ns.begin() : std::string();
      inf = std::make_shared<Informer>(io_, api_, metrics_, clock_, logger_, p.spec.group,
                                       p.spec.version, p.spec.resource, scope, options_.reflector);
      informers_.push_back(inf);
    }
    auto sub = inf->subscribe(p.id, p.spec, std::move(p.sink));
    if (!sub) { // validated in subscribe(); cannot happen
      logger_->error("subscription {}: {}", p.id, sub.error());
      continue;
    }
    subs_[p.id] = {inf, sub.value()};
  }
  pending_.clear();
  for (const auto& inf : informers_) {
    std::weak_ptr<Informer> weak = inf;
    health.add("informer:" + inf->id(), [weak] {
      auto i = weak.lock();
      if (!i) return HealthStatus{false, true, "stopped"};
      if (i->synced()) return HealthStatus{true, true, "synced"};
      return HealthStatus{false, true, "not synced: " + i->status()};
    });
    logger_->info("informer {} starting ({} subscription(s))", inf->id(),
                  std::count_if(subs_.begin(), subs_.end(),
                                [&](const auto& s) { return s.second.first == inf; }));
    inf->start();
  }
}

void KubeClient::stop() {
  api_->stop();
  std::lock_guard lock(mu_);
  for (const auto& inf : informers_)
    inf->stop();
}

std::pair<std::shared_ptr<Informer>, std::shared_ptr<Subscription>>
KubeClient::find(uint64_t id) const {
  std::lock_guard lock(mu_);
  auto it = subs_.find(id);
  if (it == subs_.end()) return {};
  return it->second;
}

Result<HttpRequest> KubeClient::toHttp(const KubeRequest& w) {
  if (w.version.empty() || w.resource.empty())
    return makeError("kube request needs a version and a resource");
  if (const std::string* bad = apimachinery::badPathSegment(
          {&w.group, &w.version, &w.resource, &w.namespaceName, &w.name, &w.subresource}))
    return makeError("kube request: '" + *bad + "' is not a valid path segment");
  // The target in one string: the collection's path, then what names an object in it.
  std::string path;
  path.reserve(40 + w.group.size() + w.version.size() + w.namespaceName.size() + w.resource.size() +
               w.name.size() + w.subresource.size());
  apimachinery::appendResourcePath(path, w.group, w.version, w.namespaceName, w.resource);
  HttpRequest r;
  r.timeout = std::chrono::milliseconds(30000);
  // Writes are short: those made in one turn share a send (L1: 4.8 a turn on average, 4 or 6
  // mostly, one send for them where there were as many).
  r.pipelined = true;
  switch (w.verb) {
  case KubeRequest::Verb::kCreate: {
    if (!isJson(w.body)) return makeError("create: the body is not valid JSON");
    r.method = "POST";
    r.target = std::move(path);
    r.body = w.body;
    r.contentType = "application/json";
    return r;
  }
  case KubeRequest::Verb::kPatch: {
    if (w.name.empty()) return makeError("patch: the object's name is missing");
    const bool merge = w.patchType == KubeRequest::PatchType::kMerge;
    // Validated without a DOM unless a precondition has to be added to the patch.
    auto first = w.body.find_first_not_of(" \t\r\n");
    if (!isJson(w.body)) return makeError("patch: the body is not valid JSON");
    if (merge && w.body[first] != '{')
      return makeError("merge patch: the body must be a JSON object");
    if (!merge && w.body[first] != '[')
      return makeError("JSON patch: the body must be a JSON array");
    r.method = "PATCH";
    path.append("/").append(w.name);
    if (!w.subresource.empty()) path.append("/").append(w.subresource);
    r.target = std::move(path);
    r.contentType = merge ? "application/merge-patch+json" : "application/json-patch+json";
    if (w.resourceVersion.empty()) {
      r.body = w.body;
      return r;
    }
    // The precondition: a stale resourceVersion makes the server answer 409.
    if (merge)
      if (auto spliced = withResourceVersion(w.body, w.resourceVersion)) {
        r.body = std::move(*spliced);
        return r;
      }
    json patch = json::parse(w.body);
    if (merge && patch.contains("metadata") && !patch["metadata"].is_object())
      return makeError("merge patch: metadata must be an object to carry the resourceVersion");
    if (merge)
      patch["metadata"]["resourceVersion"] = w.resourceVersion;
    else
      patch.insert(patch.begin(), json{{"op", "test"},
                                       {"path", "/metadata/resourceVersion"},
                                       {"value", w.resourceVersion}});
    r.body = patch.dump();
    return r;
  }
  case KubeRequest::Verb::kDelete: {
    if (w.name.empty()) return makeError("delete: the object's name is missing");
    r.method = "DELETE";
    r.target = std::move(path.append("/").append(w.name));
    json options = w.body.empty() ? json::object() : json::parse(w.body, nullptr, false);
    if (!options.is_object())
      return makeError("delete: the body must be DeleteOptions (an object)");
    if (!w.resourceVersion.empty()) options["preconditions"]["resourceVersion"] = w.resourceVersion;
    if (!options.empty()) {
      r.body = options.dump();
      r.contentType = "application/json";
    }
    return r;
  }
  }
  return makeError("unknown kube request verb");
}

Result<void> KubeClient::request(const KubeRequest& w, std::function<void(KubeResult)> done) {
  auto http = toHttp(w);
  if (!http) return makeError(http.error());
  http->readGrid = options_.reflector.watchBatch; // the answers with the watches' events
  static const char* kVerbs[] = {"patch", "create", "delete"};
  // The one place transient failures of writes are retried (backoff, Retry-After), for as long
  // as the requester wants the answer: plugins never retry them themselves.
  ApiCall call{kVerbs[static_cast<int>(w.verb)], std::move(http.value()), true, -1, w.abandoned};
  api_->call(std::move(call), [done = std::move(done)](Result<HttpResponse> r) {
    KubeResult out;
    if (!r) {
      out.message = r.error();
      return done(std::move(out));
    }
    out.httpCode = r->status;
    out.body = std::move(r->body);
    if (out.httpCode < 200 || out.httpCode > 299)
      out.message =
          apimachinery::statusMessage(out.body).value_or("HTTP " + std::to_string(out.httpCode));
    done(std::move(out));
  });
  return {};
}

} // namespace kuscia_host::kube
