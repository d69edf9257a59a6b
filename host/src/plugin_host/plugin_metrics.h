// The metrics side of the ABI for one plugin instance: metric_register creates (or finds) a
// family with the host's `plugin` and `domain` labels in front of the plugin's own; metric_add,
// metric_set, metric_observe and metric_observe_exemplar update a series. Invalid calls are ignored
// and counted in kuscia_host_plugin_host_call_errors_total.
#pragma once

#include <kuscia_host/abi.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "metrics/registry.h"
#include "runtime/clock.h"

namespace kuscia_host {

class PluginMetrics {
public:
  enum class Op { kAdd, kSet, kObserve };

  // `callErrors`: the family counting invalid calls, labelled (plugin, call). `clock` dates
  // exemplars (the system clock when null).
  PluginMetrics(MetricsRegistry& registry, MetricFamily& callErrors, std::string plugin,
                std::string domain, const Clock* clock = nullptr);

  // metric_register; *out lives as long as this object.
  kh_status_t registerMetric(const kh_metric_desc_t* desc, kh_metric_t** out, std::string& err);
  // metric_add / metric_set / metric_observe on a handle registerMetric returned.
  static void update(kh_metric_t* metric, Op op, const char* const* values, size_t count, double v);
  // metric_observe_exemplar: observes v; an invalid exemplar is dropped and the call counted.
  static void observeWithExemplar(kh_metric_t* metric, const char* const* values, size_t count,
                                  double v, const char* const* exemplarNames,
                                  const char* const* exemplarValues, size_t exemplarCount);
  // Counts an invalid call from the plugin ("cache_list", "metric_add", ...).
  void countCallError(const char* call);

private:
  struct Handle {
    PluginMetrics* owner;
    MetricFamily* family;
    std::size_t pluginLabels;
    // The series already updated through this handle, by the plugin's label values (each
    // followed by a NUL): found without building the family's key of strings. A family keeps
    // its series for good, so the pointers stay valid. Under its own lock: a plugin may update
    // from threads of its own.
    std::mutex mu;
    std::unordered_map<std::string, MetricSeries*> seen;
  };
  // The series an update names, nullptr (the call counted) when the update is invalid.
  static MetricSeries* seriesFor(Handle* h, Op op, const char* const* values, size_t n, double v);

  MetricsRegistry& registry_;
  MetricFamily& callErrors_;
  std::string plugin_;
  std::string domain_;
  const Clock* clock_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Handle>> handles_;
};

} // namespace kuscia_host
