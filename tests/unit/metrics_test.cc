#include "metrics/registry.h"

#include <gtest/gtest.h>

#include "plugin_host/plugin_metrics.h"
#include "runtime/clock.h"

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

// Prometheus asks for OpenMetrics first; a client naming only the text format, or nothing, or
// something else, gets text; weights decide between the two.
TEST(MetricsTest, TheFormatIsNegotiatedFromAccept) {
  const char* prometheus = "application/openmetrics-text;version=1.0.0,application/"
                           "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
                           "*/*;q=0.1";
  EXPECT_EQ(metricsFormatFor(prometheus), MetricsFormat::kOpenMetrics);
  EXPECT_EQ(metricsFormatFor("application/openmetrics-text"), MetricsFormat::kOpenMetrics);
  EXPECT_EQ(metricsFormatFor("Application/OpenMetrics-Text; Version=1.0.0"),
            MetricsFormat::kOpenMetrics);
  EXPECT_EQ(metricsFormatFor(""), MetricsFormat::kText);
  EXPECT_EQ(metricsFormatFor("*/*"), MetricsFormat::kText);
  EXPECT_EQ(metricsFormatFor("text/plain;version=0.0.4"), MetricsFormat::kText);
  EXPECT_EQ(metricsFormatFor("application/json"), MetricsFormat::kText);
  EXPECT_EQ(metricsFormatFor("application/openmetrics-text;version=2.0.0"), MetricsFormat::kText);
  EXPECT_EQ(metricsFormatFor("text/plain;q=0.9, application/openmetrics-text;q=0.5"),
            MetricsFormat::kText);
  EXPECT_EQ(metricsFormatFor("text/plain;q=0.5, application/openmetrics-text;q=0.9"),
            MetricsFormat::kOpenMetrics);
  EXPECT_EQ(metricsFormatFor("application/openmetrics-text;q=0, text/plain"), MetricsFormat::kText);
  EXPECT_EQ(metricsFormatFor("application/openmetrics-text;q=abc"), MetricsFormat::kText);
  EXPECT_STREQ(contentTypeOf(MetricsFormat::kOpenMetrics),
               "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

// OpenMetrics: a counter's family is named without _total (one named otherwise is unknown),
// bounds are written as in the text format (le="1", rules match either), each bucket carries its
// latest exemplar, and # EOF ends it; the text format of the same registry has no exemplar.
TEST(MetricsTest, OpenMetricsCarriesEachBucketsLatestExemplar) {
  MetricsRegistry r;
  r.family(MetricKind::kCounter, "kh_events_total", "Events \"seen\"", {})
      .value()
      ->series({})
      ->add(2);
  r.family(MetricKind::kCounter, "kh_odd", "No suffix", {}).value()->series({})->add(1);
  auto* h = r.family(MetricKind::kHistogram, "kh_wait_seconds", "Waits", {"k"}, {0.5, 1}).value();
  auto* s = h->series({"v"});
  auto exemplar = [](const char* trace, double v, double at) {
    return Exemplar{exemplarLabels({{"trace_id", trace}}).value(), v, at};
  };
  s->observe(h->buckets(), 0.2, exemplar("aa", 0.2, 100));
  s->observe(h->buckets(), 0.3, exemplar("bb", 0.3, 101.5)); // the latest of its bucket wins
  s->observe(h->buckets(), 0.7);                             // no exemplar: none for le=1
  s->observe(h->buckets(), 7, exemplar("cc", 7, 102));       // +Inf
  std::string om = r.render(MetricsFormat::kOpenMetrics);
  EXPECT_NE(om.find("# HELP kh_events Events \\\"seen\\\"\n# TYPE kh_events counter\n"
                    "kh_events_total 2\n"),
            std::string::npos)
      << om;
  EXPECT_NE(om.find("# TYPE kh_odd unknown\nkh_odd 1\n"), std::string::npos) << om;
  EXPECT_NE(om.find("kh_wait_seconds_bucket{k=\"v\",le=\"0.5\"} 2 # {trace_id=\"bb\"} 0.3 101.5\n"
                    "kh_wait_seconds_bucket{k=\"v\",le=\"1\"} 3\n"
                    "kh_wait_seconds_bucket{k=\"v\",le=\"+Inf\"} 4 # {trace_id=\"cc\"} 7 102\n"),
            std::string::npos)
      << om;
  EXPECT_TRUE(om.ends_with("kh_wait_seconds_count{k=\"v\"} 4\n# EOF\n")) << om;
  std::string text = r.render();
  EXPECT_EQ(text.find('#', text.find("kh_wait_seconds_bucket")), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE kh_events_total counter\nkh_events_total 2\n"), std::string::npos);
  EXPECT_NE(text.find("le=\"1\"} 3\n"), std::string::npos) << text;
}

TEST(MetricsTest, AnExemplarsLabelsAreCheckedAndBounded) {
  EXPECT_EQ(exemplarLabels({{"trace_id", "0af7"}, {"span_id", "b7"}}).value(),
            R"({trace_id="0af7",span_id="b7"})");
  EXPECT_EQ(exemplarLabels({{"k", "a\"b\\c\nd"}}).value(), R"({k="a\"b\\c\nd"})");
  EXPECT_EQ(exemplarLabels({}).value(), "{}");
  EXPECT_FALSE(exemplarLabels({{"bad-name", "x"}}).ok());
  EXPECT_FALSE(exemplarLabels({{"k", "\xff"}}).ok());
  // 128 characters of names and values, counted as characters, not bytes.
  EXPECT_TRUE(exemplarLabels({{"k", std::string(127, 'x')}}).ok());
  EXPECT_FALSE(exemplarLabels({{"k", std::string(128, 'x')}}).ok());
  std::string accents;
  for (int i = 0; i < 127; ++i)
    accents += "\xc3\xa9";
  EXPECT_TRUE(exemplarLabels({{"k", accents}}).ok());
  auto tooLong = exemplarLabels({{"trace_id", std::string(200, 'x')}});
  ASSERT_FALSE(tooLong.ok());
  EXPECT_NE(tooLong.error().find("208 characters"), std::string::npos) << tooLong.error();
}

// metric_observe_exemplar: the observation counts whatever the exemplar; a valid one is dated by
// the instance's clock, an invalid one is dropped and the call counted.
TEST(MetricsTest, APluginsExemplarIsDatedByItsClockAndABadOneIsCountedNotKept) {
  MetricsRegistry r;
  auto errors = r.family(MetricKind::kCounter, "kh_call_errors_total", "", {"plugin", "call"});
  ManualClock clock(1700000000123456789);
  PluginMetrics alice(r, *errors.value(), "p", "alice", &clock);
  double bounds[] = {1};
  kh_metric_desc_t d{};
  d.struct_size = sizeof d;
  d.name = "kh_startup_seconds";
  d.kind = KH_METRIC_HISTOGRAM;
  d.buckets = bounds;
  d.bucket_count = 1;
  kh_metric_t* m = nullptr;
  std::string err;
  ASSERT_EQ(alice.registerMetric(&d, &m, err), KH_OK) << err;
  const char* names[] = {"trace_id"};
  const char* good[] = {"4bf92f3577b34da6a3ce929d0e0e4736"};
  const char* bad[] = {"\xff"};
  PluginMetrics::observeWithExemplar(m, nullptr, 0, 0.5, names, good, 1);
  PluginMetrics::observeWithExemplar(m, nullptr, 0, 2, names, bad, 1);
  PluginMetrics::observeWithExemplar(m, nullptr, 0, 3, nullptr, good, 1);
  std::string om = r.render(MetricsFormat::kOpenMetrics);
  EXPECT_NE(om.find(R"(kh_startup_seconds_bucket{plugin="p",domain="alice",le="1"} 1 )"
                    R"(# {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 0.5 1700000000.123)"),
            std::string::npos)
      << om;
  EXPECT_NE(om.find(R"(kh_startup_seconds_bucket{plugin="p",domain="alice",le="+Inf"} 3)"
                    "\n"),
            std::string::npos)
      << om;
  EXPECT_NE(om.find(R"(kh_call_errors_total{plugin="p",call="metric_observe_exemplar"} 2)"),
            std::string::npos)
      << om;
}

} // namespace
} // namespace kuscia_host
