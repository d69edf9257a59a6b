#include "plugin_host/plugin_metrics.h"

#include <chrono>

namespace kuscia_host {

namespace {

const char* opName(PluginMetrics::Op op) {
  switch (op) {
  case PluginMetrics::Op::kAdd: return "metric_add";
  case PluginMetrics::Op::kSet: return "metric_set";
  case PluginMetrics::Op::kObserve: return "metric_observe";
  }
  return "metric_update";
}

// Which kinds each operation applies to: add to counters and gauges, set to gauges, observe to
// histograms.
bool appliesTo(PluginMetrics::Op op, MetricKind kind) {
  switch (op) {
  case PluginMetrics::Op::kAdd: return kind != MetricKind::kHistogram;
  case PluginMetrics::Op::kSet: return kind == MetricKind::kGauge;
  case PluginMetrics::Op::kObserve: return kind == MetricKind::kHistogram;
  }
  return false;
}

} // namespace

PluginMetrics::PluginMetrics(MetricsRegistry& registry, MetricFamily& callErrors,
                             std::string plugin, std::string domain, const Clock* clock)
    : registry_(registry), callErrors_(callErrors), plugin_(std::move(plugin)),
      domain_(std::move(domain)), clock_(clock) {}

void PluginMetrics::countCallError(const char* call) {
  callErrors_.series({plugin_, call})->add(1);
}

kh_status_t PluginMetrics::registerMetric(const kh_metric_desc_t* d, kh_metric_t** out,
                                          std::string& err) {
  // Fields by offset: a plugin of any 1.x minor hands over the struct as it knew it.
  if (d == nullptr || out == nullptr || !KH_HAS_FIELD(d, kh_metric_desc_t, bucket_count) ||
      d->name == nullptr) {
    err = "metric_register: descriptor is NULL, too small or has no name";
    return KH_ERR_INVALID_ARGUMENT;
  }
  MetricKind kind;
  switch (d->kind) {
  case KH_METRIC_COUNTER: kind = MetricKind::kCounter; break;
  case KH_METRIC_GAUGE: kind = MetricKind::kGauge; break;
  case KH_METRIC_HISTOGRAM: kind = MetricKind::kHistogram; break;
  default:
    err = "metric " + std::string(d->name) + ": unknown kind " + std::to_string(d->kind);
    return KH_ERR_INVALID_ARGUMENT;
  }
  std::vector<std::string> labels = {"plugin", "domain"};
  for (size_t i = 0; i < d->label_count; ++i) {
    std::string l = d->label_names[i] != nullptr ? d->label_names[i] : "";
    if (l == "plugin" || l == "domain") {
      err =
          "metric " + std::string(d->name) + ": the host adds the labels plugin and domain itself";
      return KH_ERR_INVALID_ARGUMENT;
    }
    labels.push_back(l);
  }
  std::vector<double> buckets;
  if (d->buckets != nullptr) buckets.assign(d->buckets, d->buckets + d->bucket_count);
  auto family = registry_.family(kind, d->name, d->help != nullptr ? d->help : "", labels, buckets);
  if (!family) {
    err = family.error();
    return KH_ERR_INVALID_ARGUMENT;
  }
  // An unlabelled series exists from registration, as Prometheus client libraries export it.
  if (d->label_count == 0) family.value()->series({plugin_, domain_});
  std::lock_guard lock(mu_);
  auto h = std::make_unique<Handle>();
  h->owner = this;
  h->family = family.value();
  h->pluginLabels = d->label_count;
  handles_.push_back(std::move(h));
  *out = reinterpret_cast<kh_metric_t*>(handles_.back().get());
  return KH_OK;
}

MetricSeries* PluginMetrics::seriesFor(Handle* h, Op op, const char* const* values, size_t n,
                                       double v) {
  if (h == nullptr) return nullptr;
  MetricKind kind = h->family->kind();
  if (!appliesTo(op, kind) || n != h->pluginLabels || (values == nullptr && n > 0) ||
      (op == Op::kAdd && kind == MetricKind::kCounter && !(v >= 0))) {
    h->owner->countCallError(opName(op));
    return nullptr;
  }
  // Every update of a plugin metric passed through the family's map of label vectors (about
  // 800 instructions, most of them building the key); a handle remembers its series.
  std::string key;
  for (size_t i = 0; i < n; ++i) {
    if (values[i] != nullptr) key += values[i];
    key += '\0';
  }
  std::lock_guard lock(h->mu);
  auto [it, added] = h->seen.try_emplace(std::move(key), nullptr);
  if (added) {
    std::vector<std::string> labels;
    labels.reserve(n + 2);
    labels.emplace_back(h->owner->plugin_);
    labels.emplace_back(h->owner->domain_);
    for (size_t i = 0; i < n; ++i)
      labels.emplace_back(values[i] != nullptr ? values[i] : "");
    it->second = h->family->series(labels);
  }
  return it->second;
}

void PluginMetrics::update(kh_metric_t* m, Op op, const char* const* values, size_t n, double v) {
  auto* h = reinterpret_cast<Handle*>(m);
  MetricSeries* s = seriesFor(h, op, values, n, v);
  if (s == nullptr) return;
  switch (op) {
  case Op::kAdd: s->add(v); break;
  case Op::kSet: s->set(v); break;
  case Op::kObserve: s->observe(h->family->buckets(), v); break;
  }
}

void PluginMetrics::observeWithExemplar(kh_metric_t* m, const char* const* values, size_t n,
                                        double v, const char* const* exemplarNames,
                                        const char* const* exemplarValues, size_t exemplarCount) {
  auto* h = reinterpret_cast<Handle*>(m);
  MetricSeries* s = seriesFor(h, Op::kObserve, values, n, v);
  if (s == nullptr) return;
  std::vector<std::pair<std::string, std::string>> labels;
  bool complete = exemplarCount == 0 || (exemplarNames != nullptr && exemplarValues != nullptr);
  for (size_t i = 0; complete && i < exemplarCount; ++i) {
    complete = exemplarNames[i] != nullptr && exemplarValues[i] != nullptr;
    if (complete) labels.emplace_back(exemplarNames[i], exemplarValues[i]);
  }
  auto rendered = complete ? exemplarLabels(labels) : Result<std::string>(makeError("NULL"));
  if (!rendered) {
    h->owner->countCallError("metric_observe_exemplar");
    return s->observe(h->family->buckets(), v);
  }
  int64_t now = h->owner->clock_ != nullptr
                    ? h->owner->clock_->wallNanos()
                    : std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  // Milliseconds: what Prometheus keeps of an exemplar's timestamp.
  const int64_t millis = now / 1000000;
  double seconds = static_cast<double>(millis) / 1000;
  s->observe(h->family->buckets(), v, Exemplar{std::move(rendered.value()), v, seconds});
}

} // namespace kuscia_host
