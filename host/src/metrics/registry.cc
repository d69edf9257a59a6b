#include "metrics/registry.h"

#include <stdexcept>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace kuscia_host {
namespace {

std::string formatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v); // shortest form that round-trips
  return std::string(buf, r.ptr);
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

} // namespace

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

void MetricSeries::observe(const std::vector<double>& bounds, double v) {
  auto it = std::lower_bound(bounds.begin(), bounds.end(), v);
  if (it != bounds.end()) buckets_[it - bounds.begin()].fetch_add(1, std::memory_order_relaxed);
  value_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
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

void MetricFamily::render(std::string& out) const {
  out += "# HELP " + name_ + " ";
  escapeInto(out, help_, false);
  out += "\n# TYPE " + name_ + " ";
  out += kind_ == MetricKind::kCounter ? "counter"
         : kind_ == MetricKind::kGauge ? "gauge"
                                       : "histogram";
  out += '\n';
  std::lock_guard lock(mu_);
  for (const auto& [labels, s] : series_) {
    if (kind_ != MetricKind::kHistogram) {
      out += name_;
      renderLabels(out, labelNames_, labels);
      out += ' ' + formatValue(s->value()) + '\n';
      continue;
    }
    uint64_t cumulative = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      cumulative += s->buckets_[i].load(std::memory_order_relaxed);
      out += name_ + "_bucket";
      renderLabels(out, labelNames_, labels, "le", formatValue(buckets_[i]));
      out += ' ' + std::to_string(cumulative) + '\n';
    }
    uint64_t count = s->count();
    out += name_ + "_bucket";
    renderLabels(out, labelNames_, labels, "le", "+Inf");
    out += ' ' + std::to_string(std::max(count, cumulative)) + '\n';
    out += name_ + "_sum";
    renderLabels(out, labelNames_, labels);
    out += ' ' + formatValue(s->value()) + '\n';
    out += name_ + "_count";
    renderLabels(out, labelNames_, labels);
    out += ' ' + std::to_string(std::max(count, cumulative)) + '\n';
  }
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

std::string MetricsRegistry::render() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [name, f] : families_)
    f->render(out);
  return out;
}

} // namespace kuscia_host
