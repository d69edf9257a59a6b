// Who may read the admin server (admin/admin_auth.h), through AdminServer::dispatch as requests
// come: the open probes, static tokens re-read when the file changes, client certificates, and
// the cluster's reviews (a recorded stand-in for the API server's answers: the e2e asks a real
// one) with their caches, rate and failures.
#include "admin/admin_auth.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sstream>
#include <thread>

#include "admin/admin_server.h"
#include "test_support.h"

namespace kuscia_host {
namespace {

using nlohmann::json;

TEST(AdminAuthTest, BearerTokensAndTokenFiles) {
  EXPECT_EQ(bearerToken("Bearer abc"), "abc");
  EXPECT_EQ(bearerToken("bearer   abc  "), "abc");
  EXPECT_EQ(bearerToken("BEARER abc"), "abc");
  for (const char* bad : {"", "Bearer", "Bearer ", "Basic abc", "Bearerabc", "Bearer a b",
                          "Bearer \x01x", "Token abc"})
    EXPECT_FALSE(bearerToken(bad)) << bad;
  auto ok = parseTokenFile("# comment\n\n t1 prometheus \nt2  alice the admin\n");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_EQ(ok->at("t1"), "prometheus");
  EXPECT_EQ(ok->at("t2"), "alice the admin");
  auto noName = parseTokenFile("t1 a\nsecret-token\n");
  ASSERT_FALSE(noName);
  EXPECT_EQ(noName.error().find("line 2:"), 0u);
  EXPECT_EQ(noName.error().find("secret-token"), std::string::npos); // never the token
  auto twice = parseTokenFile("t1 a\nt1 b\n");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().find("the same token as line 1"), std::string::npos);
}

class AdminDispatchTest : public ::testing::Test {
protected:
  void SetUp() override {
    logger_ = std::make_shared<spdlog::logger>(
        "admin", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    logger_->set_level(spdlog::level::trace);
  }
  void use(AdminAuthOptions o) {
    auth_ = std::make_shared<AdminAuth>(std::move(o), clock_, metrics_, logger_);
    server_.setAuth(auth_);
    server_.route("/metrics", [](const HttpRequest& r) {
      HttpResponse out;
      out.body = "metrics for " + r.user;
      return out;
    });
    server_.route("/livez", [](const HttpRequest&) { return livezResponse(); });
  }
  HttpResponse get(const std::string& path, const std::string& token = "",
                   const std::string& certUser = "") {
    HttpRequest r;
    r.method = "GET";
    r.path = path.substr(0, path.find('?'));
    r.target = path;
    if (path.find('?') != std::string::npos)
      r.query = httpd::parseQuery(path.substr(path.find('?') + 1));
    if (!token.empty()) r.authorization = "Bearer " + token;
    if (!certUser.empty()) {
      r.clientCertVerified = true;
      r.clientCertUser = certUser;
      r.clientCertGroups = {"viewers"};
    }
    return server_.dispatch(r);
  }
  double refused(const std::string& code) {
    std::string text = metrics_.render();
    auto at = text.find("kuscia_host_admin_refused_total{code=\"" + code + "\"} ");
    return at == std::string::npos ? 0 : std::stod(text.substr(text.find("} ", at) + 2));
  }
  double reviews(const std::string& review, const std::string& result) {
    std::string text = metrics_.render();
    std::string key = "kuscia_host_admin_auth_reviews_total{review=\"" + review + "\",result=\"" +
                      result + "\"} ";
    auto at = text.find(key);
    return at == std::string::npos ? 0 : std::stod(text.substr(at + key.size()));
  }

  boost::asio::io_context io_;
  ManualClock clock_{0, 1};
  MetricsRegistry metrics_;
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> logger_;
  AdminServer server_{io_, std::make_shared<spdlog::logger>(
                               "admin-server", std::make_shared<spdlog::sinks::null_sink_mt>())};
  std::shared_ptr<AdminAuth> auth_;
};

TEST_F(AdminDispatchTest, StaticTokensReReadWhenTheFileChanges) {
  test::TempDir dir;
  std::string file = (dir.path() / "tokens").string();
  test::writeFile(file, "first-token prometheus\n");
  AdminAuthOptions o;
  o.mode = AdminAuthOptions::Mode::kToken;
  o.tokenFile = file;
  use(o);
  EXPECT_EQ(get("/livez").status, 200); // the probe is open
  HttpResponse none = get("/metrics");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(json::parse(none.body)["reason"], "Unauthorized");
  EXPECT_EQ(none.contentType, "application/json");
  EXPECT_EQ(get("/metrics", "wrong").status, 401);
  HttpResponse ok = get("/metrics", "first-token");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "metrics for prometheus");
  EXPECT_EQ(get("/nowhere").status, 401); // no route is told to a stranger
  EXPECT_EQ(get("/nowhere", "first-token").status, 404);
  // Rotated: the new token works, the old one no longer.
  std::this_thread::sleep_for(std::chrono::milliseconds(20)); // a new mtime
  test::writeFile(file, "second-token prometheus\n# the old one is gone\n");
  EXPECT_EQ(get("/metrics", "second-token").status, 200);
  EXPECT_EQ(get("/metrics", "first-token").status, 401);
  // A broken rewrite keeps the tokens read before.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  test::writeFile(file, "only-a-token\n");
  EXPECT_EQ(get("/metrics", "second-token").status, 200);
  EXPECT_EQ(refused("401"), 4);
  for (const char* secret : {"first-token", "second-token", "only-a-token"})
    EXPECT_EQ(log_.str().find(secret), std::string::npos) << "a token in the log: " << log_.str();
}

TEST_F(AdminDispatchTest, ClientCertificatesAuthenticateWhenAClientCaIsSet) {
  AdminAuthOptions o;
  o.mode = AdminAuthOptions::Mode::kToken;
  o.tokenFile = "/nonexistent";
  o.clientCertificates = true;
  use(o);
  HttpResponse r = get("/metrics", "", "alice");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "metrics for alice");
}

// auth: kubernetes, against recorded review answers: who the TokenReview says, whether the
// SubjectAccessReview allows the path; both cached; failures and the review rate refuse.
TEST_F(AdminDispatchTest, KubernetesReviewsAreCachedRateLimitedAndFailClosed) {
  std::vector<json> asked;
  int code = 201;
  AdminAuthOptions o;
  o.mode = AdminAuthOptions::Mode::kKubernetes;
  o.reviewQps = 0.1;
  o.reviewBurst = 6;
  o.review = [&](const std::string& path, std::string body, AdminAuthOptions::ReviewDone done) {
    json req = json::parse(body);
    asked.push_back(req);
    json answer = req;
    if (path == "/apis/authentication.k8s.io/v1/tokenreviews") {
      std::string token = req["spec"]["token"];
      answer["status"] = token == "viewer-token" || token == "stranger-token"
                             ? json{{"authenticated", true},
                                    {"user",
                                     {{"username", token == "viewer-token" ? "prometheus" : "eve"},
                                      {"groups", {"system:authenticated"}}}}}
                             : json{{"authenticated", false}, {"error", "invalid token"}};
    } else {
      EXPECT_EQ(path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
      EXPECT_EQ(req["spec"]["nonResourceAttributes"]["verb"], "get");
      answer["status"] = {{"allowed", req["spec"]["user"] == "prometheus"}};
    }
    done(code, answer.dump());
  };
  use(o);
  EXPECT_EQ(get("/metrics", "viewer-token").status, 200);
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[1]["spec"]["nonResourceAttributes"]["path"], "/metrics");
  EXPECT_EQ(asked[1]["spec"]["user"], "prometheus");
  HttpResponse forbidden = get("/metrics", "stranger-token");
  EXPECT_EQ(forbidden.status, 403);
  EXPECT_EQ(json::parse(forbidden.body)["message"],
            "forbidden: User \"eve\" cannot get path \"/metrics\"");
  EXPECT_EQ(get("/metrics", "bad-token").status, 401);
  EXPECT_EQ(asked.size(), 5u);
  // Cached: allowed for 10 s, denied for 2 s.
  EXPECT_EQ(get("/metrics", "viewer-token").status, 200);
  EXPECT_EQ(get("/metrics", "bad-token").status, 401);
  EXPECT_EQ(asked.size(), 5u);
  clock_.advanceNanos(3'000'000'000);
  EXPECT_EQ(get("/metrics", "bad-token").status, 401); // asked again
  EXPECT_EQ(asked.size(), 6u);
  EXPECT_EQ(get("/metrics", "viewer-token").status, 200); // still cached
  EXPECT_EQ(asked.size(), 6u);
  // Over the review rate: 429, the cluster not asked.
  EXPECT_EQ(get("/metrics", "another-token").status, 429);
  EXPECT_EQ(asked.size(), 6u);
  EXPECT_EQ(reviews("tokenreview", "throttled"), 1);
  // The cluster cannot answer: 503, nothing cached, fail closed.
  clock_.advanceNanos(40'000'000'000);
  code = 500;
  EXPECT_EQ(get("/metrics", "viewer-token").status, 503);
  code = 201;
  EXPECT_EQ(get("/metrics", "viewer-token").status, 200);
  EXPECT_EQ(reviews("tokenreview", "error"), 1);
  EXPECT_GE(reviews("subjectaccessreview", "allowed"), 1);
  EXPECT_EQ(reviews("subjectaccessreview", "denied"), 1);
  EXPECT_EQ(refused("403"), 1);
  EXPECT_EQ(refused("429"), 1);
  for (const char* secret : {"viewer-token", "stranger-token", "bad-token"})
    EXPECT_EQ(log_.str().find(secret), std::string::npos) << "a token in the log: " << log_.str();
}

} // namespace
} // namespace kuscia_host
