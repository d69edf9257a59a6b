// The admin HTTP server over real loopback sockets.
#include "admin/admin_server.h"
#include "plugin_host/routes.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "logging/logging.h"
#include "runtime/runtime.h"
#include "test_support.h"

namespace kuscia_host {
namespace {

class AdminTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto c = metrics_.family(MetricKind::kCounter, "kh_test_total", "A test counter", {"k"});
    c.value()->series({"v"})->add(7);
    health_.add("informer:pods", [this] {
      return HealthStatus{podsSynced_, true, podsSynced_ ? "ok" : "not synced"};
    });
    health_.add("plugin:heartbeat/alice", [] { return HealthStatus{true, true, "ok"}; });
    server_.route("/livez", [](const HttpRequest&) { return livezResponse(); });
    server_.route("/readyz", [this](const HttpRequest& r) { return readyzResponse(health_, r); });
    server_.route("/metrics",
                  [this](const HttpRequest& req) { return metricsResponse(metrics_, req); });
    auto ep = server_.listen("127.0.0.1:0");
    ASSERT_TRUE(ep.ok()) << ep.error();
    port_ = ep->port();
    ASSERT_EQ(ep->address().to_string(), "127.0.0.1");
    runtime_.start();
  }
  void TearDown() override {
    server_.stop();
    runtime_.stop();
  }

  std::ostringstream logOut_;
  LogManager logs_{LogFormat::kText, spdlog::level::info, logOut_};
  Runtime runtime_{2};
  MetricsRegistry metrics_;
  HealthRegistry health_;
  AdminServer server_{runtime_.io(), logs_.logger("admin")};
  std::atomic<bool> podsSynced_{true};
  unsigned short port_ = 0;
};

TEST_F(AdminTest, Livez) {
  auto r = test::httpGet(port_, "/livez");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
}

TEST_F(AdminTest, ReadyzPlainAndVerbose) {
  auto r = test::httpGet(port_, "/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
  r = test::httpGet(port_, "/readyz?verbose");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "[+]informer:pods ok\n[+]plugin:heartbeat/alice ok\nreadyz check passed\n");
  podsSynced_ = false;
  r = test::httpGet(port_, "/readyz");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "[-]informer:pods not synced\nreadyz check failed\n");
  r = test::httpGet(port_, "/readyz?verbose=1");
  EXPECT_EQ(r.body,
            "[-]informer:pods not synced\n[+]plugin:heartbeat/alice ok\nreadyz check failed\n");
}

TEST_F(AdminTest, MetricsInPrometheusTextFormat) {
  auto r = test::httpGet(port_, "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body.find("# TYPE kh_test_total counter\nkh_test_total{k=\"v\"} 7\n"),
            std::string::npos)
      << r.body;
}

TEST_F(AdminTest, UnknownPathAndWrongMethod) {
  EXPECT_EQ(test::httpGet(port_, "/nope").status, 404);
  auto r = test::httpRequest(port_, "POST", "/metrics");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "GET, HEAD");
  r = test::httpRequest(port_, "HEAD", "/livez");
  EXPECT_EQ(r.status, 200);
}

TEST_F(AdminTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  auto out =
      test::rawExchange(port_, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"
                               "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_NE(out.find("HTTP/1.1 200", 10), std::string::npos) << out;
}

TEST(AdminQueryTest, ParsesAndDecodes) {
  auto q = httpd::parseQuery("verbose&a=b%20c&x=1+2&empty=");
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q["verbose"], "");
  EXPECT_EQ(q["a"], "b c");
  EXPECT_EQ(q["x"], "1 2");
}

TEST(AdminListenTest, RefusesBadAddresses) {
  boost::asio::io_context io;
  std::ostringstream out;
  LogManager logs(LogFormat::kText, spdlog::level::info, out);
  AdminServer server(io, logs.logger("admin"));
  EXPECT_FALSE(server.listen("nowhere").ok());
  EXPECT_FALSE(server.listen("example.com:80").ok());
}

// Loopback (v4, v6, v4-mapped) is quiet; any other address, the wildcard included, gets a warning
// that says the server is unauthenticated (allowUnauthenticated). (The warning's address is not
// bound here: tests bind 127.0.0.1 only.)
TEST(AdminListenTest, WarnsWhenNotLoopback) {
  using boost::asio::ip::make_address;
  for (const char* quiet : {"127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"})
    EXPECT_EQ(exposureWarning(make_address(quiet)), "") << quiet;
  for (const char* exposed : {"0.0.0.0", "::", "10.1.2.3", "::ffff:10.1.2.3", "fe80::1"}) {
    std::string w = exposureWarning(make_address(exposed));
    EXPECT_NE(w.find(std::string("listens on ") + exposed + ", not a loopback address"),
              std::string::npos)
        << w;
    EXPECT_NE(w.find("without authentication"), std::string::npos) << w;
  }
}

// Several instances of a plugin answer one route: JSON objects merge; any other answer (a page)
// is served once when every instance answers alike, and is an error when they differ.
TEST(PluginRoutesTest, MergesJsonObjectsAndServesAlikePagesOnce) {
  RouteAnswer a{200, "application/json", R"({"tasks":{"t1":{"x":1}}})"};
  RouteAnswer b{200, "application/json", R"({"tasks":{"t2":{"x":2}}})"};
  EXPECT_EQ(nlohmann::json::parse(PluginRoutes::merge({a, b}).body),
            nlohmann::json::parse(R"({"tasks":{"t1":{"x":1},"t2":{"x":2}}})"));
  RouteAnswer page{200, "text/html; charset=utf-8", "<!doctype html><p>hi</p>"};
  RouteAnswer same = PluginRoutes::merge({page, page});
  EXPECT_EQ(same.status, 200);
  EXPECT_EQ(same.contentType, page.contentType);
  EXPECT_EQ(same.body, page.body);
  RouteAnswer other{200, "text/html; charset=utf-8", "<!doctype html><p>ho</p>"};
  EXPECT_EQ(PluginRoutes::merge({page, other}).status, 500);
}

} // namespace
} // namespace kuscia_host
