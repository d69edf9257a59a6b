// Informers against the embedded API server over real sockets: initial paged list, SYNCED,
// watch, field projection, selectors, writes with preconditions and retries, and convergence
// after faults (watches dropped, history compacted, 429/500 storms, server restart, TLS).
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apiserver/server.h"
#include "app/daemon.h"
#include "config/config.h"
#include "httpd/tls.h"
#include "kube/api_client.h"
#include "kube/kube_client.h"
#include "logging/logging.h"
#include "runtime/runtime.h"
#include "test_support.h"

namespace kuscia_host::kube {
namespace {

using nlohmann::json;
using test::eventually;

constexpr const char* kPods = "/api/v1/namespaces/alice/pods";
const std::vector<std::string> kFields = {"/status/phase", "/metadata/labels/app"};

// "p<i>" (appended, not inserted: GCC 12 -O3 warns falsely on "p" + std::to_string(i)).
std::string podName(int i) {
  std::string name = "p";
  name += std::to_string(i);
  return name;
}

struct Seen {
  ChangeType type;
  std::string key;
  std::string rv;
  std::string fields;
};

// Records what one subscription delivers, and the state it implies.
class Recorder {
public:
  Subscription::Sink sink() {
    return [this](const Subscription& s, ChangeType t, const RecordPtr& r) {
      std::lock_guard lock(mu_);
      Seen e{t, r ? std::string(r->key()) : "", r ? std::string(r->resourceVersion()) : "",
             r ? s.fieldsJson(*r) : ""};
      if (t == ChangeType::kAdded || t == ChangeType::kModified) state_[e.key] = e.fields;
      if (t == ChangeType::kDeleted) state_.erase(e.key);
      events_.push_back(std::move(e));
    };
  }
  std::vector<Seen> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::map<std::string, std::string> state() const {
    std::lock_guard lock(mu_);
    return state_;
  }
  std::size_t count(ChangeType t, const std::string& key = "") const {
    std::lock_guard lock(mu_);
    return std::count_if(events_.begin(), events_.end(), [&](const Seen& e) {
      return e.type == t && (key.empty() || e.key == key);
    });
  }

private:
  mutable std::mutex mu_;
  std::vector<Seen> events_;
  std::map<std::string, std::string> state_;
};

class InformerTest : public ::testing::Test {
protected:
  void SetUp() override { startServer({}); }
  void TearDown() override {
    if (client_) client_->stop();
    if (server_) server_->stop();
    runtime_->stop();
    client_.reset();
  }

  void startServer(apiserver::ServerOptions options) {
    options.faultInjection = true;
    options.api.bookmarkInterval = std::chrono::milliseconds(100);
    server_ = std::make_unique<apiserver::ApiServer>(runtime_->io(), clock_,
                                                     logs_.logger("apiserver"), options);
    auto ep = server_->start();
    ASSERT_TRUE(ep.ok()) << ep.error();
    port_ = ep->port();
    runtime_->start();
    if (!options.tls) {
      for (const char* ns : {"alice", "bob"})
        ASSERT_EQ(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", ns}}}}).status, 201);
    }
  }

  ClusterAccess access() const {
    ClusterAccess a;
    a.server = server_->url();
    EXPECT_TRUE(parseServerUrl(a.server, a.scheme, a.host, a.port));
    a.caPem = server_->caPem();
    a.token = server_->token();
    a.description = "test";
    return a;
  }

  void makeClient(KubeClientOptions options = fastOptions(), ClusterAccess a = {}) {
    if (a.server.empty()) a = access();
    auto c = KubeClient::create(runtime_->io(), a, options, clock_, metrics_, logs_.logger("kube"));
    ASSERT_TRUE(c.ok()) << c.error();
    client_ = std::move(c.value());
  }

  static KubeClientOptions fastOptions() {
    KubeClientOptions o;
    o.qps = 1000;
    o.burst = 1000;
    o.reflector.pageSize = 7;
    o.reflector.initialBackoff = std::chrono::milliseconds(20);
    o.reflector.maxBackoff = std::chrono::milliseconds(200);
    return o;
  }

  uint64_t subscribe(Recorder& rec, const std::string& ns = "alice", const std::string& sel = "") {
    SubscriptionSpec spec{"", "v1", "pods", ns, sel, kFields, false};
    auto id = client_->subscribe(spec, rec.sink());
    EXPECT_TRUE(id.ok()) << id.error();
    return id.ok() ? *id : 0;
  }

  // Starts the client and waits for the subscription's SYNCED event.
  void startAndSync(Recorder& rec, double seconds = 10) {
    client_->start(health_);
    ASSERT_TRUE(eventually([&] { return rec.count(ChangeType::kSynced) == 1; }, seconds));
  }

  // A client with one subscription to alice's pods, started and synced; the subscription's id.
  uint64_t syncedSubscription(Recorder& rec, double seconds = 10) {
    makeClient();
    uint64_t sub = subscribe(rec);
    startAndSync(rec, seconds);
    return sub;
  }

  struct Reply {
    int status;
    json body;
  };
  Reply call(const std::string& method, const std::string& target, const json& body = nullptr,
             const std::string& type = "application/json") {
    auto r = test::httpRequest(port_, method, target, body.is_null() ? "" : body.dump(), type);
    json parsed = json::parse(r.body, nullptr, false);
    return {r.status, parsed};
  }
  // Pods p0..p<n-1> in alice, labelled app=a.
  void createPods(int n) {
    for (int i = 0; i < n; ++i)
      createPod("alice", podName(i), "a");
  }
  void createPod(const std::string& ns, const std::string& name, const std::string& app) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"labels", {{"app", app}}}}},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
    ASSERT_EQ(call("POST", "/api/v1/namespaces/" + ns + "/pods", pod).status, 201);
  }
  void setPhase(const std::string& name, const std::string& phase) {
    ASSERT_EQ(call("PATCH", std::string(kPods) + "/" + name + "/status",
                   {{"status", {{"phase", phase}}}}, "application/merge-patch+json")
                  .status,
              200);
  }
  void setLabel(const std::string& name, const std::string& app) {
    ASSERT_EQ(call("PATCH", std::string(kPods) + "/" + name,
                   {{"metadata", {{"labels", {{"app", app}}}}}}, "application/merge-patch+json")
                  .status,
              200);
  }
  // The informer's watch is open on the server (faults aimed at watches need it).
  void waitForWatch() {
    ASSERT_TRUE(eventually([&] { return server_->store().watcherCount() >= 1; }));
  }
  void fault(const std::string& query) {
    ASSERT_EQ(call("POST", "/debug/faults/" + query).status, 200) << query;
  }
  // A merge patch of alice/p0's status.
  static KubeRequest statusPatch(const json& status) {
    KubeRequest patch;
    patch.version = "v1";
    patch.resource = "pods";
    patch.namespaceName = "alice";
    patch.name = "p0";
    patch.subresource = "status";
    patch.body = json{{"status", status}}.dump();
    return patch;
  }

  // The truth: a fresh LIST, projected as the subscription projects it.
  std::map<std::string, std::string> listed(const std::string& selector = "",
                                            const std::vector<std::string>& fields = kFields) {
    std::string target =
        std::string(kPods) + (selector.empty() ? "" : "?labelSelector=" + selector);
    auto r = call("GET", target);
    EXPECT_EQ(r.status, 200);
    std::map<std::string, std::string> out;
    for (const auto& item : r.body["items"]) {
      json values = json::array();
      for (const auto& f : fields) {
        json::json_pointer p(f);
        values.push_back(item.contains(p) ? item.at(p) : json());
      }
      out["alice/" + item["metadata"]["name"].get<std::string>()] = values.dump();
    }
    return out;
  }
  std::map<std::string, std::string> cached(uint64_t sub) {
    auto found = client_->find(sub);
    const auto& informer = found.first;
    const auto& s = found.second;
    std::map<std::string, std::string> out;
    if (!informer) return out;
    informer->forEach([&](const RecordPtr& r) {
      if (s->matches(*r)) out[std::string(r->key())] = s->fieldsJson(*r);
    });
    return out;
  }
  double metric(MetricFamily* f, const std::vector<std::string>& labels) {
    return f->series(labels)->value();
  }
  // The cache, the subscriber's view and a fresh LIST all agree.
  void expectConverged(Recorder& rec, uint64_t sub) {
    EXPECT_TRUE(eventually(
        [&] {
          auto truth = listed();
          return cached(sub) == truth && rec.state() == truth;
        },
        20))
        << "cache and subscriber did not converge to the LIST";
    EXPECT_EQ(cached(sub), listed());
    EXPECT_EQ(rec.state(), listed());
  }

  std::ostringstream logOut_;
  LogManager logs_{LogFormat::kText, spdlog::level::warn, logOut_};
  SystemClock clock_;
  MetricsRegistry metrics_;
  HealthRegistry health_;
  std::unique_ptr<Runtime> runtime_ = std::make_unique<Runtime>(2);
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<KubeClient> client_;
  unsigned short port_ = 0;
};

TEST_F(InformerTest, PagedInitialListThenSyncedThenEveryChange) {
  for (int i = 0; i < 20; ++i)
    createPod("alice", podName(i), i % 2 == 0 ? "even" : "odd");
  createPod("bob", "other", "even"); // another namespace: not seen
  makeClient();
  Recorder all, even;
  uint64_t subAll = subscribe(all);
  uint64_t subEven = subscribe(even, "alice", "app=even");
  client_->start(health_);
  ASSERT_TRUE(eventually([&] { return all.count(ChangeType::kSynced) == 1; }));
  // Every object arrives before SYNCED; one informer serves both subscriptions.
  auto ev = all.events();
  ASSERT_EQ(ev.size(), 21u);
  EXPECT_EQ(ev.back().type, ChangeType::kSynced);
  EXPECT_EQ(all.count(ChangeType::kAdded), 20u);
  ASSERT_TRUE(eventually([&] { return even.count(ChangeType::kSynced) == 1; }));
  EXPECT_EQ(even.count(ChangeType::kAdded), 10u);
  EXPECT_EQ(client_->informers().size(), 1u);
  EXPECT_EQ(client_->informers()[0]->id(), "pods@alice");
  // 20 pods in pages of 7: three LIST requests.
  auto* lists = client_->metrics().requestDuration->series({"list", "200"});
  EXPECT_EQ(lists->count(), 3u);
  auto health = health_.evaluate();
  ASSERT_EQ(health.size(), 1u);
  EXPECT_EQ(health[0].first, "informer:pods@alice");
  EXPECT_TRUE(health[0].second.ok);
  EXPECT_EQ(all.state().at("alice/p1"), R"(["Pending","odd"])");

  // A change to a declared field: MODIFIED with the new values.
  setPhase("p1", "Running");
  ASSERT_TRUE(eventually([&] { return all.count(ChangeType::kModified, "alice/p1") == 1; }));
  EXPECT_EQ(all.state().at("alice/p1"), R"(["Running","odd"])");
  // A change to nothing declared: no event. (p3's change below arrives after it.)
  ASSERT_EQ(call("PATCH", std::string(kPods) + "/p1",
                 {{"metadata", {{"annotations", {{"x", "y"}}}}}}, "application/merge-patch+json")
                .status,
            200);
  setPhase("p3", "Unknown");
  ASSERT_TRUE(eventually([&] { return all.count(ChangeType::kModified, "alice/p3") == 1; }));
  EXPECT_EQ(all.count(ChangeType::kModified, "alice/p1"), 1u);
  // Leaving and entering a selector: DELETED and ADDED for that subscription only.
  setLabel("p2", "odd");
  ASSERT_TRUE(eventually([&] { return even.count(ChangeType::kDeleted, "alice/p2") == 1; }));
  EXPECT_EQ(all.count(ChangeType::kModified, "alice/p2"), 1u);
  setLabel("p1", "even");
  ASSERT_TRUE(eventually([&] { return even.count(ChangeType::kAdded, "alice/p1") == 1; }));
  // DELETED carries the last state.
  ASSERT_EQ(call("DELETE", std::string(kPods) + "/p1").status, 200);
  ASSERT_TRUE(eventually([&] { return all.count(ChangeType::kDeleted, "alice/p1") == 1; }));
  EXPECT_EQ(all.events().back().fields, R"(["Running","even"])");
  ASSERT_TRUE(eventually([&] { return even.count(ChangeType::kDeleted, "alice/p1") == 1; }));
  expectConverged(all, subAll);
  EXPECT_TRUE(eventually([&] { return even.state() == listed("app%3Deven"); }));
  EXPECT_EQ(cached(subEven), listed("app%3Deven"));
  EXPECT_EQ(all.count(ChangeType::kSynced), 1u);
}

// Cold records are packed (listed ones at once, watched ones after two sweeps) and everything a
// subscriber sees stays the same: events, the cache, changes and their absence, deletions, relists.
TEST_F(InformerTest, ColdRecordsArePackedAndReadAsBefore) {
  const std::vector<std::string> fields = {"/status/phase", "/metadata/annotations"};
  auto annotate = [&](const std::string& name, const std::string& note) {
    ASSERT_EQ(call("PATCH", std::string(kPods) + "/" + name,
                   {{"metadata", {{"annotations", {{"kuscia.secretflow/timeline", note}}}}}},
                   "application/merge-patch+json")
                  .status,
              200);
  };
  auto truth = [&] { return listed("", fields); };
  auto note = [](int i) {
    std::string n;
    for (const char* d : {"alice", "bob"})
      n += std::string(d) + "/task-" + std::to_string(i) + "-0 created 2026-11-01T08:00:0" +
           std::to_string(i % 10) +
           "Z scheduled 2026-11-01T08:00:01Z started 2026-11-01T08:00:02Z ready "
           "2026-11-01T08:00:09Z; ";
    return n;
  };
  for (int i = 0; i < 12; ++i) {
    createPod("alice", podName(i), "a");
    annotate(podName(i), note(i));
  }
  KubeClientOptions options = fastOptions();
  options.reflector.packMinBytes = 64;
  options.reflector.sweepEvery = std::chrono::milliseconds(40);
  makeClient(options);
  Recorder rec;
  SubscriptionSpec spec{"", "v1", "pods", "alice", "", fields, false};
  auto id = client_->subscribe(spec, rec.sink());
  ASSERT_TRUE(id.ok()) << id.error();
  startAndSync(rec);
  auto informer = client_->informers()[0];
  auto packedCount = [&] {
    std::size_t n = 0;
    informer->forEach([&](const RecordPtr& r) { n += r->packed() ? 1 : 0; });
    return n;
  };
  auto cachedState = [&] {
    std::map<std::string, std::string> out;
    auto sub = client_->find(*id).second;
    informer->forEach(
        [&](const RecordPtr& r) { out[std::string(r->key())] = sub->fieldsJson(*r); });
    return out;
  };
  // Listed: packed at once, delivered and cached as the LIST says.
  EXPECT_EQ(packedCount(), 12u);
  EXPECT_EQ(metric(client_->metrics().packedCached, {informer->id()}), 12);
  EXPECT_EQ(rec.state(), truth());
  EXPECT_EQ(cachedState(), truth());
  EXPECT_NE(rec.state().at("alice/p3").find("task-3-0 created"), std::string::npos);

  // A change to a declared field of a packed record: MODIFIED, and the record is plain (hot).
  annotate("p1", note(101));
  ASSERT_TRUE(eventually([&] { return rec.count(ChangeType::kModified, "alice/p1") == 1; }));
  EXPECT_EQ(rec.state(), truth());
  // A change to nothing declared of a packed record: nothing.
  setLabel("p2", "b");
  setPhase("p4", "Running"); // arrives after p2's change
  ASSERT_TRUE(eventually([&] { return rec.count(ChangeType::kModified, "alice/p4") == 1; }));
  EXPECT_EQ(rec.count(ChangeType::kModified, "alice/p2"), 0u);
  // Two sweeps later the changed records are packed again.
  ASSERT_TRUE(eventually([&] { return packedCount() == 12u; }));
  EXPECT_EQ(cachedState(), truth());
  // A deletion carries the last state; a relist of unchanged packed records says nothing.
  ASSERT_EQ(call("DELETE", std::string(kPods) + "/p3").status, 200);
  ASSERT_TRUE(eventually([&] { return rec.count(ChangeType::kDeleted, "alice/p3") == 1; }));
  waitForWatch();
  fault("respond?path=/api/v1/namespaces/alice/pods&method=GET&watch=1&status=503&count=3");
  fault("drop-watches");
  annotate("p5", note(105));
  fault("compact");
  ASSERT_TRUE(eventually([&] { return rec.state() == truth() && cachedState() == truth(); }, 20));
  EXPECT_GE(metric(client_->metrics().relists, {informer->id()}), 1);
  EXPECT_EQ(rec.count(ChangeType::kModified, "alice/p5"), 1u);
  EXPECT_EQ(rec.count(ChangeType::kModified, "alice/p6"), 0u);
  EXPECT_EQ(rec.count(ChangeType::kModified), 3u);
  ASSERT_TRUE(eventually([&] { return packedCount() == 11u; }));
  EXPECT_TRUE(
      eventually([&] { return metric(client_->metrics().packedCached, {informer->id()}) == 11; }));
  // A burst of watched records, more than a sweep packs in one turn of the strand (its chunks,
  // Informer::kPackChunk): all packed once cold, and read as before.
  for (int i = 12; i < 12 + 150; ++i) {
    createPod("alice", podName(i), "a");
    annotate(podName(i), note(i));
  }
  ASSERT_TRUE(eventually([&] { return rec.state() == truth(); }, 20));
  ASSERT_TRUE(eventually([&] { return packedCount() == 161u; }, 20));
  EXPECT_EQ(cachedState(), truth());
  EXPECT_EQ(rec.state(), truth());
}

// Releases (ABI 1.3 cache_release): an object every subscription released is forgotten (a digest
// stays); changes nobody declared, relists that find it unchanged and its deletion deliver
// nothing; a change of anything declared brings it back as ADDED to every subscriber. A release
// outlives changes its subscription does not see; stale and unknown releases are refused.
TEST_F(InformerTest, ReleasedObjectsAreForgottenUntilTheyChange) {
  createPods(10);
  makeClient();
  Recorder a, b;
  uint64_t subA = subscribe(a); // phase and app
  auto idB = client_->subscribe({"", "v1", "pods", "alice", "", {"/metadata/labels/app"}, false},
                                b.sink());
  ASSERT_TRUE(idB.ok()) << idB.error();
  client_->start(health_);
  ASSERT_TRUE(eventually(
      [&] { return a.count(ChangeType::kSynced) == 1 && b.count(ChangeType::kSynced) == 1; }));
  auto found = client_->find(subA);
  std::shared_ptr<Informer> informer = found.first;
  std::shared_ptr<Subscription> sA = found.second;
  auto sB = client_->find(*idB).second;
  const std::string id = informer->id();
  auto rv = [&](const std::string& key) {
    RecordPtr r = informer->get(key);
    return r ? std::string(r->resourceVersion()) : std::string();
  };
  auto forgotten = [&] { return metric(client_->metrics().forgottenCached, {id}); };
  using R = Informer::Release;

  // Refused: an unknown object, a version that is not the cached one.
  EXPECT_EQ(informer->release(*sA, "alice/none", "1"), R::kNotFound);
  EXPECT_EQ(informer->release(*sA, "alice/p0", rv("alice/p0") + "0"), R::kStale);
  // One subscription's release keeps the object for the other; both forget it.
  EXPECT_EQ(informer->release(*sA, "alice/p0", rv("alice/p0")), R::kReleased);
  EXPECT_TRUE(informer->get("alice/p0"));
  EXPECT_EQ(informer->release(*sB, "alice/p0", rv("alice/p0")), R::kReleased);
  ASSERT_TRUE(eventually([&] { return !informer->get("alice/p0"); }));
  EXPECT_EQ(informer->forgotten(), 1u);
  EXPECT_EQ(forgotten(), 1);
  EXPECT_EQ(informer->size(), 9u);
  EXPECT_EQ(informer->release(*sA, "alice/p0", "1"), R::kNotFound);

  // A change nobody declared: nothing (p9's change, after it, is the marker).
  ASSERT_EQ(call("PATCH", std::string(kPods) + "/p0",
                 {{"metadata", {{"annotations", {{"x", "y"}}}}}}, "application/merge-patch+json")
                .status,
            200);
  setPhase("p9", "Running");
  ASSERT_TRUE(eventually([&] { return a.count(ChangeType::kModified, "alice/p9") == 1; }));
  EXPECT_FALSE(informer->get("alice/p0"));
  EXPECT_EQ(a.count(ChangeType::kAdded, "alice/p0"), 1u); // the initial list's only
  // A declared change (A's phase): back as ADDED to both, cached again.
  setPhase("p0", "Running");
  ASSERT_TRUE(eventually([&] { return b.count(ChangeType::kAdded, "alice/p0") == 2; }));
  ASSERT_TRUE(eventually([&] { return a.count(ChangeType::kAdded, "alice/p0") == 2; }));
  EXPECT_EQ(a.state().at("alice/p0"), R"(["Running","a"])");
  EXPECT_TRUE(informer->get("alice/p0"));
  EXPECT_EQ(informer->forgotten(), 0u);

  // B's release of p1 outlives a change only A sees; A's release of the new version completes it.
  EXPECT_EQ(informer->release(*sB, "alice/p1", rv("alice/p1")), R::kReleased);
  setPhase("p1", "Running");
  ASSERT_TRUE(eventually([&] { return a.count(ChangeType::kModified, "alice/p1") == 1; }));
  EXPECT_EQ(b.count(ChangeType::kModified, "alice/p1"), 0u);
  EXPECT_EQ(informer->release(*sA, "alice/p1", rv("alice/p1")), R::kReleased);
  ASSERT_TRUE(eventually([&] { return !informer->get("alice/p1"); }));
  // A change B sees takes B's release back (its event), and the object stays.
  EXPECT_EQ(informer->release(*sA, "alice/p2", rv("alice/p2")), R::kReleased);
  EXPECT_EQ(informer->release(*sB, "alice/p2", rv("alice/p2")), R::kReleased);
  ASSERT_TRUE(eventually([&] { return !informer->get("alice/p2"); }));
  EXPECT_EQ(informer->forgotten(), 2u);

  // A forgotten object deleted: no DELETED.
  ASSERT_EQ(call("DELETE", std::string(kPods) + "/p2").status, 200);
  setPhase("p9", "Failed");
  ASSERT_TRUE(eventually([&] { return a.count(ChangeType::kModified, "alice/p9") == 2; }));
  EXPECT_EQ(a.count(ChangeType::kDeleted), 0u);
  EXPECT_EQ(informer->forgotten(), 1u);

  // Through a relist: p1 (unchanged) stays forgotten without an event; p3, forgotten and then
  // changed while the watch was down, comes back as ADDED; p4, forgotten and deleted, goes.
  for (const char* p : {"alice/p3", "alice/p4"}) {
    EXPECT_EQ(informer->release(*sA, p, rv(p)), R::kReleased);
    EXPECT_EQ(informer->release(*sB, p, rv(p)), R::kReleased);
  }
  ASSERT_TRUE(eventually([&] { return informer->forgotten() == 3u; }));
  waitForWatch();
  fault("respond?path=/api/v1/namespaces/alice/pods&method=GET&watch=1&status=503&count=3");
  fault("drop-watches");
  setLabel("p3", "c");
  ASSERT_EQ(call("DELETE", std::string(kPods) + "/p4").status, 200);
  fault("compact");
  ASSERT_TRUE(eventually([&] { return b.count(ChangeType::kAdded, "alice/p3") == 2; }, 20));
  EXPECT_GE(metric(client_->metrics().relists, {id}), 1);
  EXPECT_TRUE(eventually([&] { return informer->forgotten() == 1u; }));
  EXPECT_EQ(b.state().at("alice/p3"), R"(["c"])");
  EXPECT_EQ(a.count(ChangeType::kAdded, "alice/p1"), 1u);
  EXPECT_EQ(b.count(ChangeType::kAdded, "alice/p1"), 1u);
  EXPECT_EQ(a.count(ChangeType::kDeleted), 0u);
  EXPECT_EQ(b.count(ChangeType::kDeleted), 0u);
  EXPECT_FALSE(informer->get("alice/p1"));
  EXPECT_EQ(informer->size(), 7u); // p0, p3, p5..p9
}

TEST_F(InformerTest, ConvergesAfterWatchesDroppedAndHistoryCompacted) {
  createPods(10);
  Recorder rec;
  uint64_t sub = syncedSubscription(rec);
  const std::string id = client_->informers()[0]->id();
  waitForWatch();
  // Keep the informer from watching again while the cluster changes and the history is
  // compacted: it must come back with a 410 and relist.
  fault("respond?path=/api/v1/namespaces/alice/pods&method=GET&watch=1&status=503&count=3");
  fault("drop-watches");
  setPhase("p1", "Running");
  setLabel("p2", "b");
  ASSERT_EQ(call("DELETE", std::string(kPods) + "/p3").status, 200);
  createPod("alice", "new", "c");
  fault("compact");
  expectConverged(rec, sub);
  EXPECT_GE(metric(client_->metrics().relists, {id}), 1);
  EXPECT_GE(metric(client_->metrics().watchRestarts, {id}), 1);
  EXPECT_EQ(rec.count(ChangeType::kDeleted, "alice/p3"), 1u);
  EXPECT_EQ(rec.count(ChangeType::kAdded, "alice/new"), 1u);
  EXPECT_EQ(rec.count(ChangeType::kSynced), 1u);
  // And it keeps following changes afterwards.
  setPhase("p4", "Failed");
  expectConverged(rec, sub);
}

TEST_F(InformerTest, MalformedEventsAreSkippedCountedAndLoggedOnce) {
  createPod("alice", "p0", "a");
  Recorder rec;
  uint64_t sub = syncedSubscription(rec);
  const std::string id = client_->informers()[0]->id();
  waitForWatch();
  auto inject = [&](const std::string& bytes) {
    ASSERT_EQ(test::httpRequest(port_, "POST", "/debug/faults/inject", bytes).status, 200);
  };
  // Well framed but bad objects: skipped and counted; the stream goes on.
  inject("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}\n");
  inject("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":7,\"resourceVersion\":\"1\"}}}\n");
  inject("{\"type\":\"ADDED\",\"object\":[1,2]}\n");
  setPhase("p0", "Running");
  ASSERT_TRUE(eventually([&] { return rec.count(ChangeType::kModified, "alice/p0") == 1; }));
  EXPECT_EQ(metric(client_->metrics().decodeErrors, {id}), 3);
  EXPECT_EQ(metric(client_->metrics().watchRestarts, {id}), 0); // the same watch went on
  // A broken stream: the watch restarts from the last resourceVersion, nothing is lost.
  inject("this is not JSON\n");
  setPhase("p0", "Failed");
  expectConverged(rec, sub);
  EXPECT_EQ(metric(client_->metrics().decodeErrors, {id}), 4);
  EXPECT_GE(metric(client_->metrics().watchRestarts, {id}), 1);
  EXPECT_EQ(metric(client_->metrics().relists, {id}), 0);
  // Logged once, then only counted.
  std::string log = logOut_.str();
  std::size_t first = log.find("skipped a malformed object");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("skipped a malformed object", first + 1), std::string::npos) << log;
}

TEST_F(InformerTest, SurvivesErrorStormsOnListAndWatch) {
  createPods(5);
  // 500 without Retry-After (exponential backoff from 200 ms), then 429 with Retry-After 0: the
  // list is retried through both storms.
  fault("respond?path=/api/v1/namespaces/alice/pods&method=GET&status=500&count=3");
  fault("respond?path=/api/v1/namespaces/alice/pods&method=GET&status=429&count=4&retryAfter=0");
  Recorder rec;
  uint64_t sub = syncedSubscription(rec, 20);
  EXPECT_GE(metric(client_->metrics().requestRetries, {"list", "429"}), 4);
  EXPECT_GE(metric(client_->metrics().requestRetries, {"list", "500"}), 3);
  waitForWatch();
  fault("respond?path=/api/v1/namespaces/alice/pods&method=GET&watch=1&status=500&count=5");
  fault("drop-watches");
  setPhase("p0", "Running");
  expectConverged(rec, sub);
}

TEST_F(InformerTest, ConvergesAfterServerRestart) {
  createPods(5);
  Recorder rec;
  uint64_t sub = syncedSubscription(rec);
  server_->stop(); // connections refused from here
  ASSERT_TRUE(eventually([&] {
    return metric(client_->metrics().watchRestarts, {client_->informers()[0]->id()}) >= 2;
  }));
  server_->store().compact();
  ASSERT_TRUE(server_->start().ok());
  setPhase("p2", "Running");
  ASSERT_EQ(call("DELETE", std::string(kPods) + "/p4").status, 200);
  expectConverged(rec, sub);
}

// An in-memory API server that restarts has lost every object, and its resourceVersions start
// again from 1. It answers a watch from the informer's (now too large) resourceVersion with a
// 504 "too large resource version" after a short wait; the informer relists: objects created
// right after the restart are delivered, objects that vanished are DELETED.
TEST_F(InformerTest, ConvergesAfterServerRestartThatLostItsState) {
  createPods(5);
  for (int i = 0; i < 20; ++i)
    setPhase("p0", i % 2 == 0 ? "Running" : "Pending"); // the resourceVersion climbs past 25
  Recorder rec;
  uint64_t sub = syncedSubscription(rec);
  const std::string id = client_->informers()[0]->id();
  waitForWatch();
  server_->stop();
  apiserver::ServerOptions o;
  o.listen = "127.0.0.1:" + std::to_string(port_);
  o.api.tooLargeWait = std::chrono::milliseconds(300);
  server_ =
      std::make_unique<apiserver::ApiServer>(runtime_->io(), clock_, logs_.logger("apiserver"), o);
  ASSERT_TRUE(server_->start().ok());
  ASSERT_EQ(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "alice"}}}}).status, 201);
  createPod("alice", "fresh0", "x");
  createPod("alice", "fresh1", "y");
  expectConverged(rec, sub);
  EXPECT_EQ(rec.state().size(), 2u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(rec.count(ChangeType::kDeleted, "alice/" + podName(i)), 1u) << podName(i);
  EXPECT_EQ(rec.count(ChangeType::kAdded, "alice/fresh0"), 1u);
  EXPECT_GE(metric(client_->metrics().relists, {id}), 1);
  EXPECT_EQ(rec.count(ChangeType::kSynced), 1u);
  // And it follows the new server afterwards.
  createPod("alice", "fresh2", "z");
  expectConverged(rec, sub);
}

// A BOOKMARK (or event) whose resourceVersion is older than the last one means the server's
// history is not the one the cache came from: relist.
TEST_F(InformerTest, ResourceVersionGoingBackwardsMakesTheInformerRelist) {
  createPods(3);
  for (int i = 0; i < 5; ++i)
    setPhase("p0", i % 2 == 0 ? "Running" : "Pending");
  Recorder rec;
  uint64_t sub = syncedSubscription(rec);
  const std::string id = client_->informers()[0]->id();
  waitForWatch();
  ASSERT_EQ(test::httpRequest(port_, "POST", "/debug/faults/inject",
                              R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1",)"
                              R"("metadata":{"resourceVersion":"2"}}})"
                              "\n")
                .status,
            200);
  ASSERT_TRUE(eventually([&] { return metric(client_->metrics().relists, {id}) >= 1; }));
  setPhase("p1", "Running");
  expectConverged(rec, sub);
}

TEST_F(InformerTest, WritesWithPreconditionsRetriesAndStatusMessages) {
  createPod("alice", "p0", "a");
  makeClient();
  auto rv = call("GET", std::string(kPods) + "/p0").body["metadata"]["resourceVersion"];
  auto write = [&](const KubeRequest& w) {
    std::promise<KubeResult> p;
    auto sent = client_->request(w, [&p](KubeResult r) { p.set_value(std::move(r)); });
    EXPECT_TRUE(sent.ok()) << sent.error();
    return p.get_future().get();
  };
  KubeRequest patch = statusPatch({{"phase", "Running"}});
  patch.resourceVersion = rv;
  auto ok = write(patch);
  EXPECT_EQ(ok.httpCode, 200) << ok.message;
  EXPECT_EQ(ok.message, "");
  EXPECT_EQ(json::parse(ok.body)["status"]["phase"], "Running");
  // The same (now stale) resourceVersion: 409 with the server's message, to recompute.
  auto conflict = write(patch);
  EXPECT_EQ(conflict.httpCode, 409);
  EXPECT_NE(conflict.message.find("the object has been modified"), std::string::npos);
  // A JSON patch whose precondition holds.
  KubeRequest jp = patch;
  jp.patchType = KubeRequest::PatchType::kJson;
  jp.body = R"([{"op":"replace","path":"/status/phase","value":"Succeeded"}])";
  jp.resourceVersion = json::parse(ok.body)["metadata"]["resourceVersion"];
  EXPECT_EQ(write(jp).httpCode, 200);
  // Transient failures are retried: 429 with Retry-After 0, then 503.
  fault(
      "respond?path=/api/v1/namespaces/alice/pods/p0&method=PATCH&status=429&count=2&retryAfter=0");
  fault("respond?path=/api/v1/namespaces/alice/pods/p0&method=PATCH&status=503&count=1");
  patch.resourceVersion.clear();
  patch.body = R"({"status":{"phase":"Failed"}})";
  EXPECT_EQ(write(patch).httpCode, 200);
  EXPECT_EQ(metric(client_->metrics().requestRetries, {"patch", "429"}), 2);
  EXPECT_EQ(metric(client_->metrics().requestRetries, {"patch", "503"}), 1);
  // A write is retried until its answer is final, past any count (the one layer that retries),
  // and not after its requester has gone.
  fault("respond?path=/api/v1/namespaces/alice/pods/p0&method=PATCH&status=429&count=12"
        "&retryAfter=0");
  patch.body = R"({"status":{"phase":"Pending"}})";
  EXPECT_EQ(write(patch).httpCode, 200);
  EXPECT_EQ(metric(client_->metrics().requestRetries, {"patch", "429"}), 14);
  fault("respond?path=/api/v1/namespaces/alice/pods/p0&method=PATCH&status=429&count=1000000"
        "&retryAfter=0");
  std::atomic<bool> gone{false};
  patch.abandoned = [&gone] { return gone.load(); };
  std::promise<KubeResult> abandoned;
  ASSERT_TRUE(
      client_->request(patch, [&](KubeResult r) { abandoned.set_value(std::move(r)); }).ok());
  ASSERT_TRUE(eventually([&] {
    return metric(client_->metrics().requestRetries, {"patch", "429"}) >= 16;
  }));
  gone = true;
  EXPECT_EQ(abandoned.get_future().get().httpCode, 429); // the last answer, no more tries
  fault("reset");
  patch.abandoned = nullptr;
  // Create, delete with a stale precondition, delete.
  KubeRequest create;
  create.verb = KubeRequest::Verb::kCreate;
  create.version = "v1";
  create.resource = "pods";
  create.namespaceName = "alice";
  create.body = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"made"},)"
                R"("spec":{"containers":[{"name":"c","image":"x"}]}})";
  EXPECT_EQ(write(create).httpCode, 201);
  KubeRequest del;
  del.verb = KubeRequest::Verb::kDelete;
  del.version = "v1";
  del.resource = "pods";
  del.namespaceName = "alice";
  del.name = "made";
  del.resourceVersion = "1";
  EXPECT_EQ(write(del).httpCode, 409);
  del.resourceVersion.clear();
  EXPECT_EQ(write(del).httpCode, 200);
  auto missing = write(del);
  EXPECT_EQ(missing.httpCode, 404);
  EXPECT_NE(missing.message.find("not found"), std::string::npos);
  // Bad requests are refused before anything is sent.
  KubeRequest bad = patch;
  bad.body = "{not json";
  EXPECT_FALSE(client_->request(bad, [](const KubeResult&) {}).ok());
  // Valid JSON the fast validator cannot represent (an integer beyond 64 bits) is still sent.
  KubeRequest big = patch;
  big.body = R"({"metadata":{"annotations":{"n":"1"}},"x":123456789012345678901234567890})";
  EXPECT_TRUE(client_->request(big, [](const KubeResult&) {}).ok());
  bad = patch;
  bad.body = "[]"; // a JSON patch's body for a merge patch
  EXPECT_FALSE(client_->request(bad, [](const KubeResult&) {}).ok());
  bad.body = R"({"metadata":7})";
  bad.resourceVersion = "1"; // no object to carry the precondition
  EXPECT_FALSE(client_->request(bad, [](const KubeResult&) {}).ok());
  bad = patch;
  bad.name = "a/b";
  EXPECT_FALSE(client_->request(bad, [](const KubeResult&) {}).ok());
  bad.name = "p0 HTTP/1.1\r\nX-Injected: 1\r\n"; // no header injection through a name
  auto refused = client_->request(bad, [](const KubeResult&) {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("not a valid path segment"), std::string::npos);
}

// One token every 4 s (burst 1): the initial LIST takes the first, so a write queued after the
// sync waits about 4 s. Meanwhile the watch delivers changes and a dropped watch is opened again
// at once, twice: watches never wait for the limiter (a watch that took tokens would wait for
// this one, or starve the write).
TEST_F(InformerTest, RateLimitAppliesToWritesNotWatches) {
  createPods(2);
  KubeClientOptions o = fastOptions();
  o.qps = 0.2; // the write waits 5 s for its token
  o.burst = 1;
  makeClient(o);
  Recorder rec;
  uint64_t sub = subscribe(rec);
  startAndSync(rec);
  waitForWatch();
  const std::string id = client_->informers()[0]->id();
  // Shared with the callback: if an expectation fails, the write may still complete after the
  // test body returned.
  auto done = std::make_shared<std::atomic<int>>(0);
  ASSERT_TRUE(client_->request(statusPatch({{"message", "limited"}}), [done](const KubeResult& r) {
    EXPECT_EQ(r.httpCode, 200);
    ++*done;
  }));
  for (const char* phase : {"Running", "Succeeded"}) {
    fault("drop-watches");
    setPhase("p1", phase);
    std::string want = std::string(R"([")") + phase + R"(","a"])";
    EXPECT_TRUE(eventually([&] { return rec.state()["alice/p1"] == want; }, 2.0))
        << "the watch waited for the rate limiter";
    EXPECT_EQ(*done, 0) << "the write did not wait for its token";
  }
  EXPECT_GE(metric(client_->metrics().watchRestarts, {id}), 2);
  ASSERT_TRUE(eventually([&] { return *done == 1; }, 10));
  EXPECT_GT(metric(client_->metrics().rateLimiterWait, {}), 2);
  expectConverged(rec, sub);
}

TEST_F(InformerTest, WritesInFlightAreCappedAndReuseTheirConnections) {
  createPods(1);
  KubeClientOptions o = fastOptions();
  o.qps = 100000; // the rate limiter never holds a write back here
  o.burst = 100000;
  makeClient(o);
  // Every answer takes 100 ms (one after the other on a connection): a burst of writes piles up.
  fault("latency?ms=100");
  auto burst = [&](int n) {
    auto done = std::make_shared<std::atomic<int>>(0);
    for (int i = 0; i < n; ++i) {
      EXPECT_TRUE(
          client_->request(statusPatch({{"message", "burst"}}), [done](const KubeResult& r) {
            EXPECT_EQ(r.httpCode, 200);
            ++*done;
          }));
    }
    EXPECT_TRUE(eventually([&] { return *done == n; }, 30)) << *done << " of " << n;
  };
  // More writes than the connections carry pipelined at once: the rest wait for room.
  const int n = ApiClient::kMaxInFlight + 88;
  const uint64_t before = server_->connectionsAccepted();
  burst(n);
  const uint64_t first = server_->connectionsAccepted() - before;
  EXPECT_EQ(first, static_cast<uint64_t>(BeastHttpClient::kMaxConnections))
      << "writes went out in parallel, never over more connections than the cap";
  // The next burst goes over the connections the first one left idle.
  burst(n);
  EXPECT_EQ(server_->connectionsAccepted() - before, first);
  fault("reset");
}

// The host side of the ABI in a running daemon: a write still pending when the instance stops is
// completed with http_code 0 before on_destroy; without a cluster the kube functions are NULL.
TEST_F(InformerTest, DaemonCompletesPendingWritesWithCodeZeroOnStop) {
  createPod("alice", "p0", "a");
  test::TempDir dir;
  std::string kubeconfig = dir.file("kubeconfig");
  ASSERT_TRUE(server_->writeKubeconfig(kubeconfig).ok());
  std::string events = dir.file("events");
  // The plugin's patch gets 503 with Retry-After 60: it is still waiting when the host stops.
  fault("respond?path=/api/v1/namespaces/alice/pods/p0/status&method=PATCH&status=503&"
        "retryAfter=60");
  std::string yaml =
      "mode: p2p\nadmin:\n  listen: 127.0.0.1:0\ncluster:\n  kubeconfig: " + kubeconfig +
      "\ndomains:\n  - id: alice\n    plugins:\n      - name: probe\n"
      "        config:\n          subscribe: v1/pods\n          fields: /status/phase\n"
      "          eventFile: " +
      events + "\n          patchOnSynced: 'alice/p0/status|{}'\n";
  ConfigLoadOptions lo;
  lo.extraPluginDirs = {KH_TEST_PLUGIN_DIR};
  auto loaded = parseHostConfig(yaml, "test.yaml", lo);
  ASSERT_TRUE(loaded.config) << (loaded.errors.empty() ? "" : loaded.errors[0].str());
  {
    Daemon daemon(*loaded.config, DaemonOptions{}, logs_, clock_);
    ASSERT_TRUE(daemon.start().ok());
    ASSERT_NE(daemon.kube(), nullptr);
    ASSERT_TRUE(eventually([&] {
      return daemon.instances()[0]->pendingKubeRequests() == 1 &&
             metric(daemon.kube()->metrics().requestRetries, {"patch", "503"}) == 1;
    }));
    daemon.shutdown();
  }
  std::string trace = test::readFile(events);
  EXPECT_NE(trace.find(R"("type":"SYNCED")"), std::string::npos) << trace;
  EXPECT_NE(trace.find(R"({"result":0,"tag":42,"message":"the instance stopped before the )"
                       R"(request completed"})"),
            std::string::npos)
      << trace;

  // No cluster: the table's kube functions are NULL, so the probe's subscribe fails on_create.
  auto none = parseHostConfig("domains:\n  - id: alice\n    plugins:\n      - name: probe\n"
                              "        config:\n          subscribe: v1/pods\n",
                              "none.yaml", lo);
  ASSERT_TRUE(none.config);
  Daemon daemon(*none.config, DaemonOptions{"127.0.0.1:0"}, logs_, clock_);
  auto r = daemon.start();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("not available"), std::string::npos) << r.error();
}

TEST(InformerTlsTest, BearerTokenAndClientCertificate) {
  auto clientCerts = httpd::generateCertificates("kuscia-host-test-client", {}, false);
  ASSERT_TRUE(clientCerts.ok()) << clientCerts.error();
  std::ostringstream logOut;
  LogManager logs{LogFormat::kText, spdlog::level::warn, logOut};
  SystemClock clock;
  Runtime runtime(2);
  apiserver::ServerOptions options;
  options.tls = true;
  options.clientCaPem = clientCerts->caCertPem;
  apiserver::ApiServer server(runtime.io(), clock, logs.logger("apiserver"), options);
  ASSERT_TRUE(server.start().ok());
  runtime.start();
  ClusterAccess base;
  base.server = server.url();
  ASSERT_TRUE(parseServerUrl(base.server, base.scheme, base.host, base.port));
  base.caPem = server.caPem();
  base.description = "test";
  auto syncs = [&](const ClusterAccess& a) {
    MetricsRegistry metrics;
    HealthRegistry health;
    KubeClientOptions o;
    o.reflector.initialBackoff = std::chrono::milliseconds(20);
    auto c = KubeClient::create(runtime.io(), a, o, clock, metrics, logs.logger("kube"));
    EXPECT_TRUE(c.ok()) << c.error();
    if (!c.ok()) return false;
    Recorder rec;
    SubscriptionSpec spec{"", "v1", "namespaces", "", "", {"/metadata/name"}, false};
    EXPECT_TRUE((*c)->subscribe(spec, rec.sink()).ok());
    (*c)->start(health);
    bool ok = eventually([&] { return rec.count(ChangeType::kSynced) == 1; }, 3);
    (*c)->stop();
    if (ok) {
      EXPECT_EQ(rec.state().count("default"), 1u);
    }
    return ok;
  };
  ClusterAccess token = base;
  token.token = server.token();
  EXPECT_TRUE(syncs(token));
  ClusterAccess cert = base;
  cert.clientCertPem = clientCerts->certPem;
  cert.clientKeyPem = clientCerts->keyPem;
  EXPECT_TRUE(syncs(cert));
  EXPECT_FALSE(syncs(base)); // neither: 401, never synced
  server.stop();
  runtime.stop();
}

} // namespace
} // namespace kuscia_host::kube
