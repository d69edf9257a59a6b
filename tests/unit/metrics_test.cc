#include "metrics/registry.h"

#include <gtest/gtest.h>

#include "plugin_host/plugin_metrics.h"

namespace kuscia_host {
namespace {

TEST(MetricsTest, CounterAndGaugeRenderInTextFormat) {
  MetricsRegistry r;
  auto c = r.family(MetricKind::kCounter, "kh_events_total", "Events seen", {"type"});
  ASSERT_TRUE(c.ok()) << c.error();
  c.value()->series({"ADDED"})->add(2);
  c.value()->series({"ADDED"})->add(1);
  auto g = r.family(MetricKind::kGauge, "kh_ready", "Readiness", {});
  g.value()->series({})->set(1);
  std::string text = r.render();
  EXPECT_NE(text.find("# HELP kh_events_total Events seen\n# TYPE kh_events_total counter\n"
                      "kh_events_total{type=\"ADDED\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE kh_ready gauge\nkh_ready 1\n"), std::string::npos) << text;
}

TEST(MetricsTest, UnlabelledFamiliesAreExportedAtZeroFromRegistration) {
  MetricsRegistry r;
  ASSERT_TRUE(r.family(MetricKind::kCounter, "kh_drops_total", "Drops", {}).ok());
  ASSERT_TRUE(r.family(MetricKind::kHistogram, "kh_wait_seconds", "Waits", {}, {1}).ok());
  ASSERT_TRUE(r.family(MetricKind::kCounter, "kh_by_type_total", "By type", {"type"}).ok());
  std::string text = r.render();
  EXPECT_NE(text.find("\nkh_drops_total 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nkh_wait_seconds_count 0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("kh_by_type_total{"), std::string::npos) << text; // labelled: on first use
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  MetricsRegistry r;
  auto h = r.family(MetricKind::kHistogram, "kh_latency_seconds", "Latency", {"verb"}, {0.1, 1});
  ASSERT_TRUE(h.ok());
  auto* s = h.value()->series({"patch"});
  s->observe(h.value()->buckets(), 0.05);
  s->observe(h.value()->buckets(), 0.5);
  s->observe(h.value()->buckets(), 5);
  std::string text = r.render();
  EXPECT_NE(text.find("kh_latency_seconds_bucket{verb=\"patch\",le=\"0.1\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kh_latency_seconds_bucket{verb=\"patch\",le=\"1\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("kh_latency_seconds_bucket{verb=\"patch\",le=\"+Inf\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kh_latency_seconds_sum{verb=\"patch\"} 5.55\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kh_latency_seconds_count{verb=\"patch\"} 3\n"), std::string::npos) << text;
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  MetricsRegistry r;
  auto c = r.family(MetricKind::kCounter, "kh_x_total", "help with \\ and\nnewline", {"k"});
  c.value()->series({"a\"b\\c\nd"})->add(1);
  std::string text = r.render();
  EXPECT_NE(text.find("kh_x_total{k=\"a\\\"b\\\\c\\nd\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("# HELP kh_x_total help with \\\\ and\\nnewline\n"), std::string::npos)
      << text;
}

TEST(MetricsTest, SameFamilyTwiceIsSharedButDifferentShapeIsRefused) {
  MetricsRegistry r;
  auto a = r.family(MetricKind::kCounter, "kh_a_total", "A", {"x"});
  auto b = r.family(MetricKind::kCounter, "kh_a_total", "A", {"x"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value(), b.value());
  auto c = r.family(MetricKind::kGauge, "kh_a_total", "A", {"x"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("already registered"), std::string::npos);
  EXPECT_FALSE(r.family(MetricKind::kCounter, "kh_a_total", "A", {"y"}).ok());
}

TEST(MetricsTest, InvalidNamesAndBucketsAreRefused) {
  MetricsRegistry r;
  EXPECT_FALSE(r.family(MetricKind::kCounter, "1bad", "", {}).ok());
  EXPECT_FALSE(r.family(MetricKind::kCounter, "bad-name", "", {}).ok());
  EXPECT_FALSE(r.family(MetricKind::kCounter, "ok_total", "", {"le"}).ok());
  EXPECT_FALSE(r.family(MetricKind::kCounter, "ok_total", "", {"__x"}).ok());
  EXPECT_FALSE(r.family(MetricKind::kCounter, "ok_total", "", {"a", "a"}).ok());
  EXPECT_FALSE(r.family(MetricKind::kHistogram, "h", "", {}, {1, 1}).ok());
  EXPECT_FALSE(r.family(MetricKind::kGauge, "g", "", {}, {1}).ok());
}

TEST(MetricsTest, WrongLabelCountGivesNoSeries) {
  MetricsRegistry r;
  auto c = r.family(MetricKind::kCounter, "kh_b_total", "B", {"x"});
  EXPECT_EQ(c.value()->series({}), nullptr);
  EXPECT_EQ(c.value()->series({"1", "2"}), nullptr);
}

// A plugin's updates through its handles: each label set its own series, for each instance,
// however often the handle has been used before (the handle remembers the series it found).
TEST(MetricsTest, PluginUpdatesReachTheSeriesOfTheirLabelsAndInstance) {
  MetricsRegistry r;
  auto errors = r.family(MetricKind::kCounter, "kh_call_errors_total", "", {"plugin", "call"});
  ASSERT_TRUE(errors.ok());
  PluginMetrics alice(r, *errors.value(), "p", "alice");
  PluginMetrics bob(r, *errors.value(), "p", "bob");
  const char* labelNames[] = {"a", "b"};
  kh_metric_desc_t d{};
  d.struct_size = sizeof d;
  d.name = "kh_things_total";
  d.kind = KH_METRIC_COUNTER;
  d.label_names = labelNames;
  d.label_count = 2;
  kh_metric_t* ma = nullptr;
  kh_metric_t* mb = nullptr;
  std::string err;
  ASSERT_EQ(alice.registerMetric(&d, &ma, err), KH_OK) << err;
  ASSERT_EQ(bob.registerMetric(&d, &mb, err), KH_OK) << err;
  const char* xEmpty[] = {"x", ""};
  const char* emptyX[] = {"", "x"};
  const char* xNull[] = {"x", nullptr};
  for (int i = 0; i < 3; ++i) {
    PluginMetrics::update(ma, PluginMetrics::Op::kAdd, xEmpty, 2, 1);
    PluginMetrics::update(ma, PluginMetrics::Op::kAdd, emptyX, 2, 10);
    PluginMetrics::update(mb, PluginMetrics::Op::kAdd, xEmpty, 2, 100);
  }
  PluginMetrics::update(ma, PluginMetrics::Op::kAdd, xNull, 2, 1000); // NULL reads as ""
  PluginMetrics::update(ma, PluginMetrics::Op::kAdd, xEmpty, 1, 1);   // wrong count: refused
  PluginMetrics::update(ma, PluginMetrics::Op::kSet, xEmpty, 2, 5);   // a counter: refused
  std::string text = r.render();
  EXPECT_NE(text.find(R"(kh_things_total{plugin="p",domain="alice",a="x",b=""} 1003)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(kh_things_total{plugin="p",domain="alice",a="",b="x"} 30)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(kh_things_total{plugin="p",domain="bob",a="x",b=""} 300)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(kh_call_errors_total{plugin="p",call="metric_add"} 1)"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(kh_call_errors_total{plugin="p",call="metric_set"} 1)"), std::string::npos)
      << text;
}

} // namespace
} // namespace kuscia_host
