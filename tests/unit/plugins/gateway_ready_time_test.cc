// gateway-ready-time through the fake host: when a service counts as programmed, the one
// guarded annotation write, 409s that never overwrite, and Envoy's admin API as the source
// (against a local HTTP server answering in Envoy's /clusters?format=json shape).
#include "gateway_ready_time.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "kuscia_fixtures.h"
#include <kuscia_model/kuscia_time.h>

namespace kuscia_host::plugins::gateway {
namespace {

using nlohmann::json;
using test::deliver;
using test::fixture;

const kh_plugin_v1_t* descriptor() {
  return sdk::pluginDescriptor<GatewayReadyTime>("gateway-ready-time");
}

class GatewayTest : public ::testing::Test {
protected:
  void SetUp() override {
    svc_ = fixture("service.json");
    svc_["metadata"]["annotations"].erase("kuscia.secretflow/ready-time");
    endpoints_ = fixture("endpoints.json");
    host_.setWallTimeNanos(*model::parseTime("2024-05-20T08:00:07.123Z"));
  }
  void start(const std::string& config = "{}") {
    ASSERT_TRUE(host_.create(descriptor(), config)) << host_.error();
    ASSERT_TRUE(host_.start()) << host_.error();
  }
  json noAddresses() const {
    json e = endpoints_;
    e["subsets"] = json::array();
    return e;
  }
  GatewayReadyTime& plugin() { return *sdk::pluginObject<GatewayReadyTime>(host_.instance()); }
  testing::FakeHost host_{"alice"};
  json svc_, endpoints_;
};

TEST(GatewayConfigTest, DefaultsAndRejections) {
  auto c = parseGatewayConfig("{}");
  EXPECT_EQ(c.source, GatewayConfig::Source::kEndpoints);
  EXPECT_FALSE(c.millis);
  EXPECT_THROW(parseGatewayConfig(R"({"source": "dns"})"), sdk::ConfigError);
  auto bad = testing::FakeHost::validateConfig(descriptor(), R"({"envoyAdminUrl": "ftp://x"})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->first, "envoyAdminUrl");
  EXPECT_TRUE(parseHttpUrl("http://127.0.0.1:15000"));
  EXPECT_EQ(parseHttpUrl("http://envoy:9901/admin/")->basePath, "/admin");
  EXPECT_FALSE(parseHttpUrl("https://127.0.0.1:15000"));
  EXPECT_FALSE(parseHttpUrl("http://127.0.0.1:0"));
}

TEST_F(GatewayTest, WritesTheAnnotationOnceTheEndpointsHaveAnAddressGuardedByTheVersion) {
  start();
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  deliver(host_, "endpoints", KH_EVENT_ADDED, noAddresses());
  EXPECT_TRUE(host_.requests().empty());
  deliver(host_, "endpoints", KH_EVENT_MODIFIED, endpoints_);
  ASSERT_EQ(host_.requests().size(), 1u);
  const auto& r = host_.requests()[0];
  EXPECT_EQ(r.resource, "services");
  EXPECT_EQ(r.namespaceName, "alice");
  EXPECT_EQ(r.name, "secretflow-task-psi-0-spu");
  EXPECT_EQ(r.subresource, "");
  EXPECT_EQ(r.patchType, KH_PATCH_MERGE);
  EXPECT_EQ(r.resourceVersion, "48201");
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"metadata":{"annotations":{
              "kuscia.secretflow/ready-time":"2024-05-20T08:00:07Z"}}})"));
  host_.complete(r.id, 200);
  EXPECT_EQ(host_.metricSum("kuscia_gateway_service_create_to_programmed_seconds"), 7.123);
  // Later changes of a stamped service write nothing.
  svc_["metadata"]["annotations"]["kuscia.secretflow/ready-time"] = "2024-05-20T08:00:07Z";
  svc_["metadata"]["resourceVersion"] = "48300";
  deliver(host_, "services", KH_EVENT_MODIFIED, svc_);
  deliver(host_, "endpoints", KH_EVENT_MODIFIED, endpoints_);
  EXPECT_EQ(host_.requests().size(), 1u);
}

TEST_F(GatewayTest, AServiceIsHeldOnlyWhileItsAnnotationIsDue) {
  start();
  // Stamped services (a month of finished tasks' services, or those written before a restart)
  // are not held, whatever their Endpoints do.
  for (int i = 0; i < 20; ++i) {
    json s = svc_, ep = endpoints_;
    std::string name = "done-" + std::to_string(i);
    s["metadata"]["name"] = ep["metadata"]["name"] = name;
    s["metadata"]["uid"] = "uid-" + name;
    s["metadata"]["annotations"]["kuscia.secretflow/ready-time"] = "2024-05-20T08:00:05Z";
    deliver(host_, "services", KH_EVENT_ADDED, s);
    deliver(host_, "endpoints", KH_EVENT_ADDED, ep);
  }
  EXPECT_EQ(plugin().heldServices(), 0u);
  // One starting: held until its write lands.
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  EXPECT_EQ(plugin().heldServices(), 1u);
  deliver(host_, "endpoints", KH_EVENT_ADDED, endpoints_);
  ASSERT_EQ(host_.requests().size(), 1u);
  EXPECT_EQ(plugin().heldServices(), 1u) << "the write is in flight";
  host_.complete(host_.requests()[0].id, 200);
  EXPECT_EQ(plugin().heldServices(), 0u);
  // Its next event (the annotation it wrote) writes nothing and holds nothing.
  svc_["metadata"]["annotations"]["kuscia.secretflow/ready-time"] = "2024-05-20T08:00:07Z";
  svc_["metadata"]["resourceVersion"] = "48300";
  deliver(host_, "services", KH_EVENT_MODIFIED, svc_);
  deliver(host_, "endpoints", KH_EVENT_MODIFIED, endpoints_);
  EXPECT_EQ(host_.requests().size(), 1u);
  EXPECT_EQ(plugin().heldServices(), 0u);
  // Someone removes the annotation: the service is held again and, its Endpoints read from the
  // cache, stamped again without waiting for them to change.
  svc_["metadata"]["annotations"].erase("kuscia.secretflow/ready-time");
  svc_["metadata"]["resourceVersion"] = "48400";
  deliver(host_, "services", KH_EVENT_MODIFIED, svc_);
  ASSERT_EQ(host_.requests().size(), 2u);
  EXPECT_EQ(host_.requests()[1].resourceVersion, "48400");
}

TEST_F(GatewayTest, AnAnnotationAlreadyThereIsNeverRewritten) {
  start();
  svc_["metadata"]["annotations"]["kuscia.secretflow/ready-time"] = "2024-05-20T08:00:05Z";
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  deliver(host_, "endpoints", KH_EVENT_ADDED, endpoints_);
  host_.advanceMillis(60000);
  EXPECT_TRUE(host_.requests().empty());
}

TEST_F(GatewayTest, AConflictRereadsAndNeverOverwritesWhatSomeoneElseWrote) {
  start();
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  deliver(host_, "endpoints", KH_EVENT_ADDED, endpoints_);
  ASSERT_EQ(host_.requests().size(), 1u);
  host_.complete(host_.requests()[0].id, 409, "{}", "the object has been modified");
  // Someone else stamped it meanwhile.
  svc_["metadata"]["annotations"]["kuscia.secretflow/ready-time"] = "2024-05-20T08:00:06Z";
  svc_["metadata"]["resourceVersion"] = "48250";
  deliver(host_, "services", KH_EVENT_MODIFIED, svc_);
  host_.advanceMillis(60000);
  EXPECT_EQ(host_.requests().size(), 1u);
  EXPECT_EQ(host_.metric("kuscia_gateway_ready_time_writes_total", "conflict"), 1);
}

TEST_F(GatewayTest, AConflictOverAnotherChangeIsRetriedWithTheNewVersion) {
  start();
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  deliver(host_, "endpoints", KH_EVENT_ADDED, endpoints_);
  host_.complete(host_.requests()[0].id, 409, "{}", "the object has been modified");
  svc_["metadata"]["labels"]["other"] = "change";
  svc_["metadata"]["resourceVersion"] = "48260";
  deliver(host_, "services", KH_EVENT_MODIFIED, svc_);
  host_.advanceMillis(200);
  ASSERT_EQ(host_.requests().size(), 2u);
  EXPECT_EQ(host_.requests()[1].resourceVersion, "48260");
}

TEST_F(GatewayTest, AnExternalNameServiceIsProgrammedWithoutEndpoints) {
  start(R"({"precision": "millis"})");
  svc_["spec"] = {{"type", "ExternalName"}, {"externalName", "bob.example.svc"}};
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  ASSERT_EQ(host_.requests().size(), 1u);
  EXPECT_EQ(
      json::parse(
          host_.requests()[0].body)["metadata"]["annotations"]["kuscia.secretflow/ready-time"],
      "2024-05-20T08:00:07.123Z");
  testing::FakeHost other("alice");
  ASSERT_TRUE(other.create(descriptor(), "{}"));
  ASSERT_TRUE(other.start());
  svc_["spec"]["externalName"] = "Not A Name";
  deliver(other, "services", KH_EVENT_ADDED, svc_);
  EXPECT_TRUE(other.requests().empty());
}

// A one-connection-at-a-time HTTP server on 127.0.0.1:0 answering every GET with `body`.
class TinyHttpServer {
public:
  explicit TinyHttpServer(std::string body) : body_(std::move(body)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 8) != 0)
      throw std::runtime_error("TinyHttpServer: cannot listen on 127.0.0.1");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        char buf[4096];
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n > 0) {
          requests_++;
          std::string res =
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
              std::to_string(body_.size()) + "\r\nConnection: close\r\n\r\n" + body_;
          ::send(c, res.data(), res.size(), MSG_NOSIGNAL);
        }
        ::close(c);
      }
    });
  }
  ~TinyHttpServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  uint16_t port() const { return port_; }
  int requests() const { return requests_; }

private:
  std::string body_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

TEST_F(GatewayTest, EnvoyAdminSourceWaitsForTheServiceClusterToBeListed) {
  TinyHttpServer envoy(
      R"({"cluster_statuses":[{"name":"service-secretflow-task-psi-0-spu","added_via_api":true},
                              {"name":"prometheus_stats"}]})");
  start(R"({"source": "envoy-admin", "pollMillis": 50, "envoyAdminUrl": "http://127.0.0.1:)" +
        std::to_string(envoy.port()) + "\"}");
  EXPECT_TRUE(test::subscription(host_, "services").fields.size() > 0);
  json other = svc_;
  other["metadata"]["name"] = "not-in-envoy";
  deliver(host_, "services", KH_EVENT_ADDED, other);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (host_.requests().empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // the poller runs in real time
    host_.advanceMillis(50);
  }
  ASSERT_EQ(host_.requests().size(), 1u);
  EXPECT_EQ(host_.requests()[0].name, "secretflow-task-psi-0-spu");
  EXPECT_GE(envoy.requests(), 1);
  host_.destroy(); // stops and joins the poller
}

TEST(EnvoyAdminTest, ParsesClusterNamesAndRefusesOtherShapes) {
  auto names = parseClusterNames(R"({"cluster_statuses":[{"name":"a"},{"name":"b"},{"x":1}]})");
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, (std::set<std::string>{"a", "b"}));
  EXPECT_FALSE(parseClusterNames("not json"));
  EXPECT_FALSE(parseClusterNames(R"({"clusters":[]})"));
}

} // namespace
} // namespace kuscia_host::plugins::gateway
