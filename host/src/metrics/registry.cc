#include "metrics/registry.h"

#include <stdexcept>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/text_lines.h"

namespace kuscia_host {
namespace {

std::string formatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v); // shortest form that round-trips
  return std::string(buf, r.ptr);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One media range of an Accept header: which format it takes (none: neither) and its weight.
struct AcceptedRange {
  std::optional<MetricsFormat> format;
  double q = 1;
};

AcceptedRange acceptedRange(std::string_view range) {
  AcceptedRange r;
  std::string type;
  std::string version;
  std::size_t at = 0;
  for (bool first = true; at <= range.size(); first = false) {
    std::size_t end = std::min(range.find(';', at), range.size());
    std::string_view part = trimSpace(range.substr(at, end - at));
    at = end + 1;
    if (first) {
      type = lower(part);
      continue;
    }
    auto eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    std::string key = lower(trimSpace(part.substr(0, eq)));
    std::string_view value = trimSpace(part.substr(eq + 1));
    if (key == "q") {
      double q = 0;
      auto res = std::from_chars(value.data(), value.data() + value.size(), q);
      r.q = res.ec == std::errc() ? q : 0;
    } else if (key == "version") {
      version = std::string(value);
    }
  }
  if (type == "application/openmetrics-text" &&
      (version.empty() || version == "1.0.0" || version == "0.0.1"))
    r.format = MetricsFormat::kOpenMetrics;
  else if ((type == "text/plain" && (version.empty() || version == "0.0.4")) || type == "text/*" ||
           type == "*/*")
    r.format = MetricsFormat::kText;
  return r;
}

void escapeInto(std::string& out, const std::string& s, bool quotes) {
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (quotes && c == '"')
      out += "\\\"";
    else
      out += c;
  }
}

void renderLabels(std::string& out, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, const char* extraName = nullptr,
                  const std::string& extraValue = "") {
  if (names.empty() && extraName == nullptr) return;
  out += '{';
  bool first = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!first) out += ',';
    first = false;
    out += names[i];
    out += "=\"";
    escapeInto(out, values[i], true);
    out += '"';
  }
  if (extraName != nullptr) {
    if (!first) out += ',';
    out += extraName;
    out += "=\"";
    out += extraValue;
    out += '"';
  }
  out += '}';
}

std::size_t characters(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) >> 6) != 2; }));
}

} // namespace

MetricsFormat metricsFormatFor(const std::string& accept) {
  // The first range of the highest weight that names a format wins.
  std::optional<MetricsFormat> best;
  double bestQ = 0;
  std::string_view rest = accept;
  while (!rest.empty()) {
    std::size_t comma = std::min(rest.find(','), rest.size());
    AcceptedRange r = acceptedRange(rest.substr(0, comma));
    rest.remove_prefix(std::min(comma + 1, rest.size()));
    if (r.format && r.q > 0 && (!best || r.q > bestQ)) {
      best = r.format;
      bestQ = r.q;
    }
  }
  return best.value_or(MetricsFormat::kText);
}

const char* contentTypeOf(MetricsFormat format) {
  return format == MetricsFormat::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

Result<std::string> exemplarLabels(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string out = "{";
  std::size_t length = 0;
  for (const auto& [name, value] : labels) {
    if (!MetricsRegistry::validLabelName(name))
      return makeError("invalid exemplar label name '" + name + "'");
    if (!validUtf8(value)) return makeError("exemplar label " + name + " is not UTF-8");
    length += characters(name) + characters(value);
    if (out.size() > 1) out += ',';
    out += name + "=\"";
    escapeInto(out, value, true);
    out += '"';
  }
  if (length > 128)
    return makeError("an exemplar's labels hold " + std::to_string(length) +
                     " characters, more than OpenMetrics' 128");
  return out + "}";
}

const std::vector<double>& defaultLatencyBuckets() {
  static const std::vector<double> b = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                        0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  return b;
}

MetricSeries::MetricSeries(std::size_t bucketCount) {
  if (bucketCount > 0) {
    buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bucketCount);
    for (std::size_t i = 0; i < bucketCount; ++i)
      buckets_[i] = 0;
  }
}

void MetricSeries::add(double v) {
  value_.fetch_add(v, std::memory_order_relaxed);
}

std::size_t MetricSeries::record(const std::vector<double>& bounds, double v) {
  auto bucket = static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) -
                                         bounds.begin()); // bounds.size(): +Inf
  if (bucket < bounds.size()) buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  value_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  return bucket;
}

void MetricSeries::observe(const std::vector<double>& bounds, double v) {
  record(bounds, v);
}

void MetricSeries::observe(const std::vector<double>& bounds, double v, Exemplar exemplar) {
  const std::size_t bucket = record(bounds, v);
  std::lock_guard lock(exemplarMu_);
  if (exemplars_.empty()) exemplars_.resize(bounds.size() + 1);
  exemplars_[bucket] = std::move(exemplar);
}

MetricFamily::MetricFamily(MetricKind kind, std::string name, std::string help,
                           std::vector<std::string> labelNames, std::vector<double> buckets)
    : kind_(kind), name_(std::move(name)), help_(std::move(help)),
      labelNames_(std::move(labelNames)), buckets_(std::move(buckets)) {}

MetricSeries* MetricFamily::series(const std::vector<std::string>& labelValues) {
  if (labelValues.size() != labelNames_.size()) return nullptr;
  std::lock_guard lock(mu_);
  auto& slot = series_[labelValues];
  if (!slot)
    slot = std::make_unique<MetricSeries>(kind_ == MetricKind::kHistogram ? buckets_.size() : 0);
  return slot.get();
}

void MetricFamily::render(std::string& out, MetricsFormat format) const {
  const bool om = format == MetricsFormat::kOpenMetrics;
  // OpenMetrics names a counter's family without the _total its samples carry; a counter named
  // otherwise is exposed as unknown there, its samples unchanged.
  std::string family = name_;
  const char* type = kind_ == MetricKind::kCounter ? "counter"
                     : kind_ == MetricKind::kGauge ? "gauge"
                                                   : "histogram";
  if (om && kind_ == MetricKind::kCounter) {
    if (family.size() > 6 && family.ends_with("_total"))
      family.resize(family.size() - 6);
    else
      type = "unknown";
  }
  out += "# HELP " + family + " ";
  escapeInto(out, help_, om);
  out += "\n# TYPE " + family + " " + type + "\n";
  std::lock_guard lock(mu_);
  for (const auto& [labels, s] : series_) {
    if (kind_ == MetricKind::kHistogram) {
      renderHistogram(out, format, labels, *s);
      continue;
    }
    out += name_;
    renderLabels(out, labelNames_, labels);
    out += ' ' + formatValue(s->value()) + '\n';
  }
}

void MetricFamily::renderHistogram(std::string& out, MetricsFormat format,
                                   const std::vector<std::string>& labels,
                                   const MetricSeries& s) const {
  const bool om = format == MetricsFormat::kOpenMetrics;
  std::vector<std::optional<Exemplar>> exemplars;
  if (om) {
    std::lock_guard lock(s.exemplarMu_);
    exemplars = s.exemplars_;
  }
  auto bucket = [&](std::size_t i, const std::string& le, uint64_t n) {
    out += name_ + "_bucket";
    renderLabels(out, labelNames_, labels, "le", le);
    out += ' ' + std::to_string(n);
    if (i < exemplars.size() && exemplars[i]) {
      const Exemplar& e = *exemplars[i];
      out += " # " + e.labels + ' ' + formatValue(e.value) + ' ' + formatValue(e.timestamp);
    }
    out += '\n';
  };
  uint64_t cumulative = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    cumulative += s.buckets_[i].load(std::memory_order_relaxed);
    // The same bound text in both formats (OpenMetrics asks canonical form only of +Inf): a
    // scraper that changes format keeps its series, and rules naming le="120" keep matching.
    bucket(i, formatValue(buckets_[i]), cumulative);
  }
  uint64_t count = std::max(s.count(), cumulative);
  bucket(buckets_.size(), "+Inf", count);
  out += name_ + "_sum";
  renderLabels(out, labelNames_, labels);
  out += ' ' + formatValue(s.value()) + '\n';
  out += name_ + "_count";
  renderLabels(out, labelNames_, labels);
  out += ' ' + std::to_string(count) + '\n';
}

bool MetricsRegistry::validMetricName(const std::string& name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool MetricsRegistry::validLabelName(const std::string& name) {
  return validMetricName(name) && name.find(':') == std::string::npos && name.rfind("__", 0) != 0;
}

MetricFamily* MetricsRegistry::hostFamily(MetricKind kind, const std::string& name,
                                          const std::string& help,
                                          const std::vector<std::string>& labelNames,
                                          const std::vector<double>& buckets) {
  auto f = family(kind, name, help, labelNames, buckets);
  if (!f) throw std::logic_error("host metric " + name + " cannot be registered: " + f.error());
  return f.value();
}

Result<MetricFamily*> MetricsRegistry::family(MetricKind kind, const std::string& name,
                                              const std::string& help,
                                              const std::vector<std::string>& labelNames,
                                              const std::vector<double>& buckets) {
  if (!validMetricName(name)) return makeError("invalid metric name '" + name + "'");
  for (const auto& l : labelNames) {
    if (!validLabelName(l) || l == "le" || l == "quantile")
      return makeError("metric " + name + ": invalid label name '" + l + "'");
    if (std::count(labelNames.begin(), labelNames.end(), l) > 1)
      return makeError("metric " + name + ": label '" + l + "' declared twice");
  }
  std::vector<double> bounds = buckets;
  if (kind == MetricKind::kHistogram) {
    if (bounds.empty()) bounds = defaultLatencyBuckets();
    for (std::size_t i = 1; i < bounds.size(); ++i)
      if (!(bounds[i] > bounds[i - 1]))
        return makeError("metric " + name + ": histogram buckets must be strictly increasing");
  } else if (!bounds.empty()) {
    return makeError("metric " + name + ": only histograms take buckets");
  }
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    auto& f = *it->second;
    if (f.kind() != kind || f.labelNames() != labelNames || f.help() != help ||
        (kind == MetricKind::kHistogram && f.buckets() != bounds))
      return makeError("metric " + name +
                       " is already registered with a different type, help, labels or buckets");
    return &f;
  }
  auto f = std::make_unique<MetricFamily>(kind, name, help, labelNames, bounds);
  auto* raw = f.get();
  // A family without labels has exactly one series: it exists, at 0, from registration (as in
  // Prometheus client libraries), so dashboards and alerts see it before the first update.
  if (labelNames.empty()) raw->series({});
  families_.emplace(name, std::move(f));
  return raw;
}

std::string MetricsRegistry::render(MetricsFormat format) const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [name, f] : families_)
    f->render(out, format);
  if (format == MetricsFormat::kOpenMetrics) out += "# EOF\n";
  return out;
}

} // namespace kuscia_host
