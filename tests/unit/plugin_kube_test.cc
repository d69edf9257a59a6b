// The Kubernetes side of one plugin instance (PluginKube), alone: a substitute KubeBridge stands
// for the cluster, so subscription rules, event hand-over, cache views, requests and their
// completion at stop are checked without informers or a server.
#include "plugin_host/plugin_kube.h"

#include <gtest/gtest.h>

#include <deque>

namespace kuscia_host {
namespace {

class FakeBridge final : public KubeBridge {
public:
  Result<uint64_t> subscribe(kube::SubscriptionSpec spec, EventSink sink) override {
    specs.push_back(spec);
    sinks.push_back(std::move(sink));
    return static_cast<uint64_t>(specs.size());
  }
  Lookup get(uint64_t, std::string_view key, const Visitor& visit) override {
    if (key != "alice/p") return Lookup::kNotFound;
    visit({"alice/p", "u1", "7", R"(["Running"])", ""});
    return Lookup::kOk;
  }
  Lookup list(uint64_t, const std::string& selector, const Visitor& visit) override {
    lastSelector = selector;
    visit({"alice/p", "u1", "7", R"(["Running"])", ""});
    visit({"alice/q", "u2", "8", R"(["Pending"])", ""});
    return Lookup::kOk;
  }
  Result<void> request(const kube::KubeRequest& w,
                       std::function<void(kube::KubeResult)> done) override {
    if (w.name.empty()) return makeError("patch: the object's name is missing");
    writes.push_back(w);
    completions.push_back(std::move(done));
    return {};
  }
  std::vector<kube::SubscriptionSpec> specs;
  std::vector<EventSink> sinks;
  std::vector<kube::KubeRequest> writes;
  std::vector<std::function<void(kube::KubeResult)>> completions;
  std::string lastSelector;
};

class PluginKubeTest : public ::testing::Test {
protected:
  PluginKube make(KubeBridge* bridge) {
    return PluginKube(
        bridge, "alice",
        PluginKube::Callbacks{
            [this](std::function<void()> fn) { posted_.push_back(std::move(fn)); },
            [this](const kh_event_t& e) { events_.emplace_back(e.key, e.fields_json); },
            [this](const kh_kube_result_t& r) { results_.emplace_back(r.user_tag, r.http_code); },
            [this](const char* call) { callErrors_.emplace_back(call); },
            [this](std::size_t queued) { queued_ = queued; }});
  }
  void runPosted() {
    while (!posted_.empty()) {
      auto fn = std::move(posted_.front());
      posted_.pop_front();
      fn();
    }
  }
  static kh_subscription_t pods(const char* const* fields, size_t n, const char* selector = "") {
    kh_subscription_t s{};
    s.struct_size = sizeof s;
    s.version = "v1";
    s.resource = "pods";
    s.scope = KH_SCOPE_DOMAIN;
    s.label_selector = selector;
    s.fields = fields;
    s.field_count = n;
    return s;
  }
  // A subscription to the domain's pods with /status/phase, made as the host does while the
  // instance is being created; its id.
  static uint64_t subscribePhase(PluginKube& k) {
    static const char* fields[] = {"/status/phase"};
    auto sub = pods(fields, 1);
    uint64_t id = 0;
    std::string err;
    k.setCreating(true);
    EXPECT_EQ(k.subscribe(&sub, &id, err), KH_OK) << err;
    k.setCreating(false);
    return id;
  }
  static kh_kube_request_t patch(const char* name, uint64_t tag) {
    kh_kube_request_t r{};
    r.struct_size = sizeof r;
    r.verb = KH_KUBE_PATCH;
    r.version = "v1";
    r.resource = "pods";
    r.namespace_name = "alice";
    r.name = name;
    r.patch_type = KH_PATCH_MERGE;
    r.body = "{}";
    r.body_len = 2;
    r.user_tag = tag;
    return r;
  }

  FakeBridge bridge_;
  std::deque<std::function<void()>> posted_;
  std::vector<std::pair<std::string, std::string>> events_;
  std::vector<std::pair<uint64_t, int>> results_;
  std::vector<std::string> callErrors_;
  std::size_t queued_ = 0; // the last queue depth reported (kuscia_host_plugin_events_queued)
};

TEST_F(PluginKubeTest, SubscribesOnlyWhileCreatingAndScopesToTheDomain) {
  PluginKube k = make(&bridge_);
  const char* fields[] = {"/status/phase"};
  auto sub = pods(fields, 1);
  uint64_t id = 0;
  std::string err;
  EXPECT_EQ(k.subscribe(&sub, &id, err), KH_ERR_FAILED_PRECONDITION);
  k.setCreating(true);
  ASSERT_EQ(k.subscribe(&sub, &id, err), KH_OK) << err;
  k.setCreating(false);
  ASSERT_EQ(bridge_.specs.size(), 1u);
  EXPECT_EQ(bridge_.specs[0].namespaceName, "alice");
  // An event is handed to the executor, then to the plugin, with the subscription's id.
  bridge_.sinks[0](id, kube::ChangeType::kAdded, {"alice/p", "u1", "7", R"(["Running"])", ""});
  EXPECT_TRUE(events_.empty());
  runPosted();
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0], std::make_pair(std::string("alice/p"), std::string(R"(["Running"])")));
}

TEST_F(PluginKubeTest, ABurstOfEventsIsOneQueueDrainedInBoundedTurns) {
  PluginKube k = make(&bridge_);
  uint64_t id = subscribePhase(k);
  ASSERT_EQ(bridge_.sinks.size(), 1u);
  // An initial list: 200 objects. One closure waits on the executor, not one per object (each
  // held the object's strings: the host's peak memory at start).
  for (int i = 0; i < 200; ++i)
    bridge_.sinks[0](id, kube::ChangeType::kAdded,
                     {"alice/p" + std::to_string(i), "u", "1", R"(["Running"])", ""});
  bridge_.sinks[0](id, kube::ChangeType::kSynced, {});
  ASSERT_EQ(posted_.size(), 1u);
  EXPECT_EQ(queued_, 201u); // the backlog is reported as it grows
  posted_.push_back([this] { events_.emplace_back("marker", ""); }); // e.g. a timer
  // One turn hands over a bounded number, then the rest waits behind what else was posted.
  auto turn = std::move(posted_.front());
  posted_.pop_front();
  turn();
  EXPECT_EQ(events_.size(), 64u);
  EXPECT_EQ(queued_, 201u - 64u); // and as it shrinks
  runPosted();
  ASSERT_EQ(events_.size(), 202u);
  EXPECT_EQ(queued_, 0u);
  EXPECT_EQ(events_[64].first, "marker");
  std::vector<std::string> keys;
  for (const auto& [key, fieldsJson] : events_)
    if (key != "marker") keys.push_back(key);
  ASSERT_EQ(keys.size(), 201u);
  for (int i = 0; i < 200; ++i)
    EXPECT_EQ(keys[static_cast<std::size_t>(i)], "alice/p" + std::to_string(i));
  EXPECT_EQ(keys[200], ""); // the sync comes after every object, in order
  // After stop, what is still queued is dropped.
  bridge_.sinks[0](id, kube::ChangeType::kModified, {"alice/p0", "u", "2", "[]", ""});
  k.stop();
  runPosted();
  EXPECT_EQ(events_.size(), 202u);
}

TEST_F(PluginKubeTest, AnswersCacheCallsAndJudgesSelectorsItself) {
  PluginKube k = make(&bridge_);
  uint64_t id = subscribePhase(k);
  ASSERT_EQ(bridge_.sinks.size(), 1u);
  int seen = 0;
  auto count = [](void* user, const kh_object_t*) -> int32_t {
    ++*static_cast<int*>(user);
    return 0;
  };
  EXPECT_EQ(k.cacheGet(id, "alice/p", count, &seen), KH_OK);
  EXPECT_EQ(k.cacheGet(id, "alice/none", count, &seen), KH_ERR_NOT_FOUND);
  EXPECT_EQ(k.cacheGet(id + 100, "alice/p", count, &seen), KH_ERR_NOT_FOUND); // not its own
  EXPECT_EQ(k.cacheList(id, "", count, &seen), KH_OK);
  EXPECT_EQ(seen, 3);
  // No labels cached: a selector is refused before the bridge is asked.
  EXPECT_EQ(k.cacheList(id, "app=a", count, &seen), KH_ERR_FAILED_PRECONDITION);
  EXPECT_EQ(k.cacheList(id, "app in (a", count, &seen), KH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bridge_.lastSelector, "");
  EXPECT_EQ(callErrors_.size(), 2u);
}

TEST_F(PluginKubeTest, RequestsCompleteOnTheExecutorAndPendingOnesWithZeroAtStop) {
  PluginKube k = make(&bridge_);
  std::string err;
  uint64_t a = 0;
  uint64_t b = 0;
  auto ra = patch("p", 11);
  auto rb = patch("q", 12);
  ASSERT_EQ(k.request(&ra, &a, err), KH_OK);
  ASSERT_EQ(k.request(&rb, &b, err), KH_OK);
  auto bad = patch("", 13);
  uint64_t c = 0;
  EXPECT_EQ(k.request(&bad, &c, err), KH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(err.find("name is missing"), std::string::npos);
  EXPECT_EQ(k.pending(), 2u);
  bridge_.completions[0]({200, "{}", ""});
  runPosted();
  EXPECT_EQ(results_, (std::vector<std::pair<uint64_t, int>>{{11, 200}}));
  k.stop();
  EXPECT_EQ(k.request(&ra, &a, err), KH_ERR_FAILED_PRECONDITION);
  k.failPending();
  EXPECT_EQ(results_.back(), std::make_pair(uint64_t{12}, 0));
  bridge_.completions[1]({200, "{}", ""}); // too late: completed once already
  runPosted();
  EXPECT_EQ(results_.size(), 2u);
}

TEST_F(PluginKubeTest, WithoutAClusterEverythingIsUnavailable) {
  PluginKube k = make(nullptr);
  EXPECT_FALSE(k.available());
  uint64_t id = 0;
  std::string err;
  auto r = patch("p", 1);
  EXPECT_EQ(k.request(&r, &id, err), KH_ERR_UNAVAILABLE);
  EXPECT_NE(err.find("no cluster is configured"), std::string::npos);
}

} // namespace
} // namespace kuscia_host
