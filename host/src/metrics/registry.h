// Metrics registry: counter, gauge and histogram families with labels, rendered in the
// Prometheus text exposition format 0.0.4. Thread-safe. Series handles are stable for the
// registry's lifetime, so hot paths resolve them once and update them lock-free.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"

namespace kuscia_host {

enum class MetricKind { kCounter, kGauge, kHistogram };

// Default histogram buckets, in seconds: 100 us .. 10 s.
const std::vector<double>& defaultLatencyBuckets();

class MetricSeries {
public:
  explicit MetricSeries(std::size_t bucketCount);
  void add(double v);
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void observe(const std::vector<double>& bounds, double v);
  double value() const { return value_.load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

private:
  friend class MetricFamily;
  std::atomic<double> value_{0}; // counter/gauge value, histogram sum
  std::atomic<uint64_t> count_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_; // non-cumulative counts per bound
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
  void render(std::string& out) const;

private:
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
  std::string render() const;

  static bool validMetricName(const std::string& name);
  static bool validLabelName(const std::string& name);

private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<MetricFamily>> families_;
};

} // namespace kuscia_host
