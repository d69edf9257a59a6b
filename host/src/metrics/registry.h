// Metrics registry: counter, gauge and histogram families with labels, rendered in the
// Prometheus text exposition format 0.0.4 or in OpenMetrics 1.0 (which alone carries a
// histogram bucket's exemplar). Thread-safe. Series handles are stable for the registry's
// lifetime, so hot paths resolve them once and update them lock-free.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kuscia_host {

enum class MetricKind { kCounter, kGauge, kHistogram };

enum class MetricsFormat {
  kText,        // text/plain; version=0.0.4
  kOpenMetrics, // application/openmetrics-text; version=1.0.0, ending with "# EOF"
};

// The format an HTTP Accept header asks for: OpenMetrics when the client names it (version
// 1.0.0, 0.0.1 or none) with a weight no lower than anything else it accepts, text otherwise
// (an empty or unknown Accept included), as Prometheus' own client libraries negotiate.
MetricsFormat metricsFormatFor(const std::string& accept);
const char* contentTypeOf(MetricsFormat format);

// An observation's exemplar (OpenMetrics): its label set, written once as `{name="value",...}`,
// the value observed and when (seconds since the epoch).
struct Exemplar {
  std::string labels;
  double value = 0;
  double timestamp = 0;
};

// Checks and renders an exemplar's labels: valid label names, UTF-8 values, at most 128
// characters of names and values together (OpenMetrics' limit).
Result<std::string> exemplarLabels(const std::vector<std::pair<std::string, std::string>>& labels);

// Default histogram buckets, in seconds: 100 us .. 10 s.
const std::vector<double>& defaultLatencyBuckets();

class MetricSeries {
public:
  explicit MetricSeries(std::size_t bucketCount);
  void add(double v);
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void observe(const std::vector<double>& bounds, double v);
  // The same, and the exemplar becomes the latest of the bucket the observation falls in.
  void observe(const std::vector<double>& bounds, double v, Exemplar exemplar);
  double value() const { return value_.load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

private:
  friend class MetricFamily;
  // Counts the observation; the index of its bucket (bounds.size(): +Inf).
  std::size_t record(const std::vector<double>& bounds, double v);
  std::atomic<double> value_{0}; // counter/gauge value, histogram sum
  std::atomic<uint64_t> count_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_; // non-cumulative counts per bound
  // The latest exemplar of each bucket (the last one: +Inf), made at the first exemplar: a
  // series observed without one pays nothing.
  mutable std::mutex exemplarMu_;
  std::vector<std::optional<Exemplar>> exemplars_;
};

class MetricFamily {
public:
  MetricFamily(MetricKind kind, std::string name, std::string help,
               std::vector<std::string> labelNames, std::vector<double> buckets);

  // The series for these label values (created on first use); nullptr when the count differs.
  MetricSeries* series(const std::vector<std::string>& labelValues);

  MetricKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& labelNames() const { return labelNames_; }
  const std::vector<double>& buckets() const { return buckets_; }
  void render(std::string& out, MetricsFormat format = MetricsFormat::kText) const;

private:
  void renderHistogram(std::string& out, MetricsFormat format,
                       const std::vector<std::string>& labels, const MetricSeries& s) const;

  MetricKind kind_;
  std::string name_;
  std::string help_;
  std::vector<std::string> labelNames_;
  std::vector<double> buckets_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<MetricSeries>> series_;
};

class MetricsRegistry {
public:
  // Finds or creates a family. An existing family with another kind, help or label set is an
  // error; so are invalid names and unsorted buckets. A family without labels gets its one
  // series at creation; labelled series appear on first use.
  Result<MetricFamily*> family(MetricKind kind, const std::string& name, const std::string& help,
                               const std::vector<std::string>& labelNames,
                               const std::vector<double>& buckets = {});
  // The same, for the host's own families, whose definitions are fixed in code: a failure is a
  // programming error and throws std::logic_error.
  MetricFamily* hostFamily(MetricKind kind, const std::string& name, const std::string& help,
                           const std::vector<std::string>& labelNames,
                           const std::vector<double>& buckets = {});
  std::string render(MetricsFormat format = MetricsFormat::kText) const;

  static bool validMetricName(const std::string& name);
  static bool validLabelName(const std::string& name);

private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<MetricFamily>> families_;
};

} // namespace kuscia_host
