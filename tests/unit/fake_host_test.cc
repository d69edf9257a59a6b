// The SDK's C++ wrapper and fake host, exercised together through the C ABI.
#include <kuscia_host/plugin.hpp>
#include <kuscia_host/testing/fake_host.hpp>

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

using kuscia_host::sdk::Host;
using kuscia_host::testing::FakeHost;

// Subscribes in its constructor, patches on every event, and fails on request.
class Watcher final : public kuscia_host::sdk::Plugin {
public:
  Watcher(Host host, std::string_view domain, std::string_view config) : Plugin(host) {
    if (config.find("fail") != std::string_view::npos) throw std::runtime_error("bad config: fail");
    kuscia_host::sdk::Subscription s;
    s.version = "v1";
    s.resource = "pods";
    s.fields = {"/metadata/creationTimestamp", "/status/startTime"};
    subscription_ = host.subscribe(s);
    domain_ = domain;
  }
  void onStart() override {
    try {
      kuscia_host::sdk::Subscription late;
      host().subscribe(late);
    } catch (const kuscia_host::sdk::HostError& e) {
      lateStatus_ = e.status();
    }
  }
  void onEvent(const kuscia_host::sdk::Event& e) override {
    if (e.key == "alice/boom") throw std::runtime_error("cannot handle " + std::string(e.key));
    lastFields_ = std::string(e.fieldsJson);
    kuscia_host::sdk::KubeRequest r;
    r.group = "kuscia.secretflow";
    r.version = "v1alpha1";
    r.resource = "kusciatasks";
    r.namespaceName = "cross-domain";
    r.name = "task-1";
    r.subresource = "status";
    r.body = R"({"status":{}})";
    r.userTag = 42;
    host().kubeRequest(r);
  }
  void onKubeResult(const kuscia_host::sdk::KubeResult& r) override {
    lastCode_ = r.httpCode;
    lastTag_ = r.userTag;
  }

  uint64_t subscription_ = 0;
  std::string domain_, lastFields_;
  kh_status_t lateStatus_ = KH_OK;
  int lastCode_ = 0;
  uint64_t lastTag_ = 0;
};

const kh_plugin_v1_t* watcher() {
  return kuscia_host::sdk::pluginDescriptor<Watcher>("watcher");
}

TEST(FakeHostTest, DescriptorCarriesAbiVersionAndName) {
  EXPECT_EQ(watcher()->abi_major, KH_ABI_VERSION_MAJOR);
  EXPECT_EQ(watcher()->abi_minor, KH_ABI_VERSION_MINOR);
  EXPECT_STREQ(watcher()->name, "watcher");
  EXPECT_EQ(watcher()->struct_size, sizeof(kh_plugin_v1_t));
}

TEST(FakeHostTest, SubscriptionsEventsAndWrites) {
  FakeHost host("bob");
  ASSERT_TRUE(host.create(watcher())) << host.error();
  ASSERT_TRUE(host.start()) << host.error();
  ASSERT_EQ(host.subscriptions().size(), 1u);
  EXPECT_EQ(host.subscriptions()[0].resource, "pods");
  EXPECT_EQ(host.subscriptions()[0].fields.size(), 2u);
  EXPECT_EQ(host.deliver(host.subscriptions()[0].id, KH_EVENT_ADDED, "bob/p", "u1", "5",
                         R"(["t1",null])"),
            KH_OK);
  ASSERT_EQ(host.requests().size(), 1u);
  const auto& req = host.requests()[0];
  EXPECT_EQ(req.subresource, "status");
  EXPECT_EQ(req.body, R"({"status":{}})");
  EXPECT_EQ(host.complete(req.id, 200), KH_OK);
  EXPECT_TRUE(host.ready());
  // What the plugin saw, through the wrapper.
  auto* w = kuscia_host::sdk::pluginObject<Watcher>(host.instance());
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->domain_, "bob");
  EXPECT_EQ(w->subscription_, host.subscriptions()[0].id);
  EXPECT_EQ(w->lateStatus_, KH_ERR_FAILED_PRECONDITION); // subscribe outside on_create
  EXPECT_EQ(w->lastFields_, R"(["t1",null])");
  EXPECT_EQ(w->lastCode_, 200);
  EXPECT_EQ(w->lastTag_, 42u);
  EXPECT_EQ(host.complete(req.id, 200), KH_ERR_NOT_FOUND); // completed once only
}

TEST(FakeHostTest, ExceptionsBecomeErrorStatusesAndLogs) {
  FakeHost host;
  ASSERT_TRUE(host.create(watcher()));
  ASSERT_TRUE(host.start());
  EXPECT_EQ(host.deliver(host.subscriptions()[0].id, KH_EVENT_ADDED, "alice/boom", "u", "1", "[]"),
            KH_ERR_INTERNAL);
  EXPECT_EQ(host.callbackErrors(), 1);
  EXPECT_TRUE(host.logged("onEvent failed: cannot handle alice/boom"));
}

TEST(FakeHostTest, ConstructorFailureReachesTheHostAsCreateError) {
  FakeHost host;
  EXPECT_FALSE(host.create(watcher(), "fail"));
  EXPECT_EQ(host.error(), "bad config: fail");
}

TEST(FakeHostTest, KubeUnavailableIsAClearError) {
  FakeHost host("alice", "p2p", /*kube=*/false);
  EXPECT_FALSE(host.create(watcher()));
  EXPECT_EQ(host.error(), "kubernetes subscriptions are not available in this host");
}

} // namespace
