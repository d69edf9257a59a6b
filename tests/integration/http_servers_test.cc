// The two servers built on httpd::Server, the admin server and the embedded API server, answer
// malformed requests the same way: 400, 431 for a header over the limit, 413 for a body over
// the limit, each reaching the client although it is still sending (the server drains before it
// closes), and the server keeps serving.
#include <gtest/gtest.h>

#include <sstream>

#include "admin/admin_server.h"
#include "apiserver/server.h"
#include "logging/logging.h"
#include "runtime/clock.h"
#include "runtime/runtime.h"
#include "test_support.h"

namespace kuscia_host {
namespace {

struct Limits {
  std::size_t header;
  std::size_t body;
};

class ServerUnderTest {
public:
  virtual ~ServerUnderTest() = default;
  virtual unsigned short port() const = 0;
  virtual std::string okPath() const = 0;
  virtual Limits limits() const = 0;
};

class Admin final : public ServerUnderTest {
public:
  Admin() {
    server_.route("/livez", [](const HttpRequest&) { return livezResponse(); });
    auto ep = server_.listen("127.0.0.1:0");
    EXPECT_TRUE(ep.ok()) << ep.error();
    port_ = ep.ok() ? ep->port() : 0;
    runtime_.start();
  }
  ~Admin() override {
    server_.stop();
    runtime_.stop();
  }
  unsigned short port() const override { return port_; }
  std::string okPath() const override { return "/livez"; }
  Limits limits() const override { return {std::size_t{8} * 1024, std::size_t{64} * 1024}; }

private:
  std::ostringstream out_;
  LogManager logs_{LogFormat::kText, spdlog::level::info, out_};
  Runtime runtime_{2};
  AdminServer server_{runtime_.io(), logs_.logger("admin")};
  unsigned short port_ = 0;
};

class Api final : public ServerUnderTest {
public:
  Api() {
    auto ep = server_.start();
    EXPECT_TRUE(ep.ok()) << ep.error();
    port_ = ep.ok() ? ep->port() : 0;
    runtime_.start();
  }
  ~Api() override {
    server_.stop();
    runtime_.stop();
  }
  unsigned short port() const override { return port_; }
  std::string okPath() const override { return "/version"; }
  Limits limits() const override { return {std::size_t{64} * 1024, std::size_t{16} * 1024 * 1024}; }

private:
  std::ostringstream out_;
  LogManager logs_{LogFormat::kText, spdlog::level::info, out_};
  SystemClock clock_;
  Runtime runtime_{2};
  apiserver::ApiServer server_{runtime_.io(), clock_, logs_.logger("apiserver"), {}};
  unsigned short port_ = 0;
};

class HttpServersTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (GetParam() == "admin")
      server_ = std::make_unique<Admin>();
    else
      server_ = std::make_unique<Api>();
    ASSERT_NE(server_->port(), 0);
  }
  std::string exchange(const std::string& bytes) {
    return test::rawExchange(server_->port(), bytes);
  }
  std::unique_ptr<ServerUnderTest> server_;
};

TEST_P(HttpServersTest, GarbageAndBadFramingGet400) {
  auto garbage = exchange("THIS IS NOT HTTP\r\n\r\n");
  EXPECT_EQ(garbage.rfind("HTTP/1.1 400", 0), 0u) << garbage;
  auto badVersion = exchange("GET " + server_->okPath() + " HTTP/9.9\r\n\r\n");
  EXPECT_EQ(badVersion.rfind("HTTP/1.1 400", 0), 0u) << badVersion;
  auto badLength = exchange("GET " + server_->okPath() + " HTTP/1.1\r\nContent-Length: -5\r\n\r\n");
  EXPECT_EQ(badLength.rfind("HTTP/1.1 400", 0), 0u) << badLength;
  EXPECT_EQ(test::httpGet(server_->port(), server_->okPath()).status, 200);
}

TEST_P(HttpServersTest, HeaderOverTheLimitGets431) {
  auto r = exchange("GET " + server_->okPath() + " HTTP/1.1\r\nX-Big: " +
                    std::string(server_->limits().header + 1000, 'a') + "\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 431", 0), 0u) << r.substr(0, 200);
  EXPECT_EQ(test::httpGet(server_->port(), server_->okPath()).status, 200);
}

// The client is still sending its body when the 413 goes out: without the drain before the
// close, the kernel resets the connection and the answer is lost.
TEST_P(HttpServersTest, BodyOverTheLimitGets413WhileTheClientIsStillSending) {
  std::size_t declared = server_->limits().body + 1000;
  auto r = exchange("POST " + server_->okPath() + " HTTP/1.1\r\nContent-Length: " +
                    std::to_string(declared) + "\r\n\r\n" + std::string(200000, 'x'));
  EXPECT_EQ(r.rfind("HTTP/1.1 413", 0), 0u) << r.substr(0, 200);
  EXPECT_EQ(test::httpGet(server_->port(), server_->okPath()).status, 200);
}

INSTANTIATE_TEST_SUITE_P(BothServers, HttpServersTest, ::testing::Values("admin", "apiserver"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

} // namespace
} // namespace kuscia_host
