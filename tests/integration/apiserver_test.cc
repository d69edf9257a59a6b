// The embedded API server over real loopback sockets: verbs, semantics, Status errors, watch.
#include "apiserver/server.h"

#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "kube/cluster_access.h"
#include "logging/logging.h"
#include "runtime/runtime.h"
#include "test_support.h"

namespace kuscia_host::apiserver {
namespace {

using nlohmann::json;

constexpr const char* kJson = "application/json";
constexpr const char* kMerge = "application/merge-patch+json";
constexpr const char* kJsonPatch = "application/json-patch+json";
constexpr const char* kStrategic = "application/strategic-merge-patch+json";
constexpr const char* kTasks =
    "/apis/kuscia.secretflow/v1alpha1/namespaces/cross-domain/kusciatasks";
constexpr const char* kPods = "/api/v1/namespaces/alice/pods";

json exampleTask() {
  auto j = json::parse(test::readFile(KH_SOURCE_DIR "/tests/fixtures/kusciatask.json"));
  return j;
}

json pod(const std::string& name, json labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
}

class ApiServerTest : public ::testing::Test {
protected:
  void SetUp() override { start({}); }
  void TearDown() override { stop(); }

  void start(ServerOptions options) {
    options.faultInjection = true;
    options.api.bookmarkInterval = std::chrono::milliseconds(50);
    server_ =
        std::make_unique<ApiServer>(runtime_->io(), clock_, logs_.logger("apiserver"), options);
    auto ep = server_->start();
    ASSERT_TRUE(ep.ok()) << ep.error();
    port_ = ep->port();
    runtime_->start();
    for (const char* ns : {"alice", "cross-domain"})
      ASSERT_EQ(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", ns}}}}).status, 201);
  }
  void stop() {
    if (server_) server_->stop();
    runtime_->stop();
    server_.reset();
  }

  struct Reply {
    int status;
    json body;
    std::map<std::string, std::string> headers;
  };
  Reply call(const std::string& method, const std::string& target, const json& body = nullptr,
             const std::string& contentType = kJson) {
    auto r =
        test::httpRequest(port_, method, target, body.is_null() ? "" : body.dump(), contentType);
    json parsed;
    try {
      parsed = json::parse(r.body);
    } catch (const json::exception&) {
      parsed = r.body;
    }
    return {r.status, parsed, r.headers};
  }
  std::string rvOf(const json& obj) {
    return obj["metadata"]["resourceVersion"].get<std::string>();
  }

  std::ostringstream logOut_;
  LogManager logs_{LogFormat::kText, spdlog::level::warn, logOut_};
  ManualClock clock_{1716192000LL * 1000000000LL}; // 2024-05-20T08:00:00Z
  std::unique_ptr<Runtime> runtime_ = std::make_unique<Runtime>(2);
  std::unique_ptr<ApiServer> server_;
  unsigned short port_ = 0;
};

TEST_F(ApiServerTest, Discovery) {
  auto v = call("GET", "/version");
  EXPECT_EQ(v.status, 200);
  EXPECT_EQ(v.body["major"], "1");
  EXPECT_EQ(v.body["minor"], "30");
  EXPECT_EQ(call("GET", "/api").body["versions"], json({"v1"}));
  auto groups = call("GET", "/apis").body;
  EXPECT_EQ(groups["kind"], "APIGroupList");
  std::map<std::string, std::string> preferred;
  for (const auto& g : groups["groups"])
    preferred[g["name"]] = g["preferredVersion"]["groupVersion"];
  EXPECT_EQ(preferred["kuscia.secretflow"], "kuscia.secretflow/v1alpha1");
  // What the shipped manifests (config/k8s) need besides the Kuscia group.
  EXPECT_EQ(preferred["apps"], "apps/v1");
  EXPECT_EQ(preferred["rbac.authorization.k8s.io"], "rbac.authorization.k8s.io/v1");
  EXPECT_EQ(preferred["apiextensions.k8s.io"], "apiextensions.k8s.io/v1");
  auto core = call("GET", "/api/v1").body;
  std::map<std::string, json> byName;
  for (const auto& r : core["resources"])
    byName[r["name"]] = r;
  EXPECT_EQ(byName["pods"]["shortNames"], json({"po"}));
  EXPECT_EQ(byName["services"]["shortNames"], json({"svc"}));
  EXPECT_EQ(byName["endpoints"]["shortNames"], json({"ep"}));
  EXPECT_TRUE(byName.count("pods/status"));
  EXPECT_TRUE(byName.count("services/status"));
  EXPECT_FALSE(byName["namespaces"]["namespaced"]);
  auto kuscia = call("GET", "/apis/kuscia.secretflow/v1alpha1").body;
  byName.clear();
  for (const auto& r : kuscia["resources"])
    byName[r["name"]] = r;
  EXPECT_EQ(byName["kusciatasks"]["shortNames"], json({"kt"}));
  EXPECT_EQ(byName["kusciatasks"]["kind"], "KusciaTask");
  EXPECT_TRUE(byName.count("kusciatasks/status"));
  // As upstream: a summary's and a TaskResource's status are written with the object.
  EXPECT_FALSE(byName.count("kusciatasksummaries/status"));
  EXPECT_FALSE(byName.count("taskresources/status"));
  for (const char* kind :
       {"kusciajobs", "taskresourcegroups", "clusterdomainroutes", "domainroutes"})
    EXPECT_TRUE(byName.count(std::string(kind) + "/status")) << kind;
  EXPECT_FALSE(byName["taskresourcegroups"]["namespaced"]);
  EXPECT_FALSE(byName["clusterdomainroutes"]["namespaced"]);
  EXPECT_TRUE(byName["taskresources"]["namespaced"]);
  EXPECT_EQ(byName["kusciajobsummaries"]["shortNames"], json({"kjs"}));
  EXPECT_EQ(byName["taskresourcegroups"]["shortNames"], json({"trg"}));
  auto openapi = call("GET", "/openapi/v3").body;
  EXPECT_TRUE(openapi["paths"].contains("apis/kuscia.secretflow/v1alpha1"));
  auto doc = call("GET", "/openapi/v3/apis/kuscia.secretflow/v1alpha1").body;
  auto patchOp =
      doc["paths"]["/apis/kuscia.secretflow/v1alpha1/namespaces/{namespace}/kusciatasks/{name}"]
         ["patch"];
  EXPECT_EQ(patchOp["x-kubernetes-group-version-kind"]["kind"], "KusciaTask");
  EXPECT_EQ(patchOp["parameters"][0]["name"], "fieldValidation");
}

TEST_F(ApiServerTest, CreateGetAndErrorsAsStatus) {
  auto created = call("POST", kPods, pod("p1"));
  ASSERT_EQ(created.status, 201) << created.body;
  const auto& meta = created.body["metadata"];
  EXPECT_EQ(meta["namespace"], "alice");
  EXPECT_EQ(meta["creationTimestamp"],
            "2024-05-20T08:00:00Z"); // the server clock, RFC 3339 seconds
  EXPECT_EQ(meta["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(created.body["status"]["phase"], "Pending"); // status is the server's on create
  auto again = call("POST", kPods, pod("p1"));
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.body["kind"], "Status");
  EXPECT_EQ(again.body["reason"], "AlreadyExists");
  EXPECT_EQ(again.body["message"], "pods \"p1\" already exists");
  EXPECT_EQ(again.body["details"]["name"], "p1");
  auto got = call("GET", std::string(kPods) + "/p1");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body["metadata"]["uid"], meta["uid"]);
  auto missing = call("GET", std::string(kPods) + "/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["reason"], "NotFound");
  EXPECT_EQ(missing.body["message"], "pods \"nope\" not found");
  auto noNs = call("POST", "/api/v1/namespaces/nowhere/pods", pod("p1"));
  EXPECT_EQ(noNs.status, 404);
  EXPECT_EQ(noNs.body["message"], "namespaces \"nowhere\" not found");
  auto badName = call("POST", kPods, pod("Bad_Name"));
  EXPECT_EQ(badName.status, 422);
  EXPECT_EQ(badName.body["reason"], "Invalid");
  auto badJson = test::httpRequest(port_, "POST", kPods, "{not json", kJson);
  EXPECT_EQ(badJson.status, 400);
  EXPECT_EQ(call("GET", "/api/v1/namespaces/alice/widgets").status, 404);
  EXPECT_EQ(call("DELETE", kPods).status, 405);
  auto proto = test::httpRequest(port_, "GET", kPods, "", "",
                                 {{"Accept", "application/vnd.kubernetes.protobuf"}});
  EXPECT_EQ(proto.status, 406);
}

TEST_F(ApiServerTest, ResourceVersionIsGlobalAndMonotonic) {
  auto a = call("POST", kPods, pod("a")).body;
  auto t = exampleTask();
  auto b = call("POST", kTasks, t).body;
  auto c = call("POST", kPods, pod("c")).body;
  EXPECT_LT(std::stoull(rvOf(a)), std::stoull(rvOf(b)));
  EXPECT_LT(std::stoull(rvOf(b)), std::stoull(rvOf(c)));
  auto list = call("GET", kPods).body;
  EXPECT_EQ(list["kind"], "PodList");
  EXPECT_EQ(list["metadata"]["resourceVersion"], rvOf(c));
  EXPECT_FALSE(list["items"][0].contains("kind")); // list items carry no kind, as upstream
  auto del = call("DELETE", std::string(kPods) + "/a");
  EXPECT_EQ(del.status, 200);
  EXPECT_GT(std::stoull(rvOf(del.body)), std::stoull(rvOf(c)));
}

TEST_F(ApiServerTest, StatusSubresourceRules) {
  auto t = exampleTask();
  auto created = call("POST", kTasks, t);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_FALSE(created.body.contains("status")); // status is dropped on create
  EXPECT_EQ(created.body["metadata"]["generation"], 1);
  std::string item = std::string(kTasks) + "/secretflow-task-psi";

  // A status write keeps only status.
  json s = created.body;
  s["status"] = {{"phase", "Running"}};
  s["spec"]["initiator"] = "bob";
  auto st = call("PUT", item + "/status", s);
  ASSERT_EQ(st.status, 200) << st.body;
  EXPECT_EQ(st.body["status"]["phase"], "Running");
  EXPECT_EQ(st.body["spec"]["initiator"], "alice");
  EXPECT_EQ(st.body["metadata"]["generation"], 1);

  // A main-resource write ignores status and bumps generation on a spec change.
  json m = st.body;
  m["status"]["phase"] = "Failed";
  m["spec"]["initiator"] = "bob";
  auto main = call("PUT", item, m);
  ASSERT_EQ(main.status, 200) << main.body;
  EXPECT_EQ(main.body["status"]["phase"], "Running");
  EXPECT_EQ(main.body["spec"]["initiator"], "bob");
  EXPECT_EQ(main.body["metadata"]["generation"], 2);

  // A metadata-only change does not bump generation.
  auto labelled = call("PATCH", item, {{"metadata", {{"labels", {{"x", "y"}}}}}}, kMerge);
  EXPECT_EQ(labelled.body["metadata"]["generation"], 2);
}

TEST_F(ApiServerTest, OptimisticConcurrency) {
  auto created = call("POST", kTasks, exampleTask()).body;
  std::string item = std::string(kTasks) + "/secretflow-task-psi";
  std::string rv = rvOf(created);
  auto ok =
      call("PATCH", item + "/status",
           {{"metadata", {{"resourceVersion", rv}}}, {"status", {{"phase", "Running"}}}}, kMerge);
  ASSERT_EQ(ok.status, 200) << ok.body;
  auto stale =
      call("PATCH", item + "/status",
           {{"metadata", {{"resourceVersion", rv}}}, {"status", {{"phase", "Failed"}}}}, kMerge);
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body["reason"], "Conflict");
  EXPECT_EQ(stale.body["message"],
            "Operation cannot be fulfilled on kusciatasks.kuscia.secretflow "
            "\"secretflow-task-psi\": the object has "
            "been modified; please apply your changes to the latest version and try again");
  // PUT on a custom resource needs a resourceVersion.
  json noRv = ok.body;
  noRv["metadata"].erase("resourceVersion");
  auto missing = call("PUT", item + "/status", noRv);
  EXPECT_EQ(missing.status, 422);
  EXPECT_NE(missing.body["message"].get<std::string>().find("metadata.resourceVersion"),
            std::string::npos);
  json staleRv = ok.body;
  staleRv["metadata"]["resourceVersion"] = rv;
  EXPECT_EQ(call("PUT", item, staleRv).status, 409);
  // Delete preconditions.
  auto pre = call("DELETE", item,
                  {{"kind", "DeleteOptions"}, {"preconditions", {{"resourceVersion", rv}}}});
  EXPECT_EQ(pre.status, 409);
  EXPECT_EQ(call("DELETE", item, {{"preconditions", {{"uid", created["metadata"]["uid"]}}}}).status,
            200);
}

// Leases as client-go's leaderelection takes and renews them, and Secrets as the shipped
// Deployment's are: stored as given; an update that read an older version is a conflict (the
// candidate that lost the race reads again).
TEST_F(ApiServerTest, LeasesAndSecretsAsClientGoUsesThem) {
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/alice/leases";
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "kuscia-host-alice"}}},
                {"spec",
                 {{"holderIdentity", "pod-a"},
                  {"leaseDurationSeconds", 15},
                  {"acquireTime", "2024-05-20T08:00:00.000000Z"},
                  {"renewTime", "2024-05-20T08:00:00.000000Z"},
                  {"leaseTransitions", 0}}}};
  auto created = call("POST", leases, lease);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.body["spec"], lease["spec"]);
  const std::string item = leases + "/kuscia-host-alice";
  json renewed = created.body;
  renewed["spec"]["renewTime"] = "2024-05-20T08:00:02.000000Z";
  auto ok = call("PUT", item, renewed);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_NE(rvOf(ok.body), rvOf(created.body));
  // Another candidate that read the first version tries to take it: refused.
  json taken = created.body;
  taken["spec"]["holderIdentity"] = "pod-b";
  auto lost = call("PUT", item, taken);
  EXPECT_EQ(lost.status, 409);
  EXPECT_EQ(lost.body["reason"], "Conflict");
  EXPECT_EQ(call("GET", item).body["spec"]["holderIdentity"], "pod-a");
  EXPECT_EQ(call("GET", "/apis/coordination.k8s.io/v1").body["resources"][0]["name"], "leases");

  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "history-password"}}},
                 {"type", "Opaque"},
                 {"data", {{"password", "c2VjcmV0"}}}};
  ASSERT_EQ(call("POST", "/api/v1/namespaces/alice/secrets", secret).status, 201);
  auto read = call("GET", "/api/v1/namespaces/alice/secrets/history-password").body;
  EXPECT_EQ(read["data"], secret["data"]);
  EXPECT_EQ(read["type"], "Opaque");
  // kubectl's typed create commands send protobuf, which this server does not decode: 415 with a
  // Status that says so (not a JSON parser's message).
  auto proto = call("POST", "/api/v1/namespaces/alice/secrets", secret,
                    "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(proto.status, 415);
  EXPECT_EQ(proto.body["reason"], "UnsupportedMediaType");
  EXPECT_NE(proto.body["message"].get<std::string>().find("does not decode protobuf"),
            std::string::npos)
      << proto.body;
  EXPECT_EQ(call("POST", "/api/v1/namespaces/alice/secrets", secret, "text/plain").status, 415);
}

TEST_F(ApiServerTest, NoOpWritesDoNotChangeTheResourceVersion) {
  auto created = call("POST", kTasks, exampleTask()).body;
  std::string item = std::string(kTasks) + "/secretflow-task-psi";
  auto first = call("PATCH", item + "/status", {{"status", {{"phase", "Running"}}}}, kMerge).body;
  auto second = call("PATCH", item + "/status", {{"status", {{"phase", "Running"}}}}, kMerge).body;
  EXPECT_EQ(rvOf(first), rvOf(second));
  EXPECT_NE(rvOf(created), rvOf(first));
}

TEST_F(ApiServerTest, CrdPruningAndValidation) {
  auto t = exampleTask();
  t["spec"]["undeclared"] = 1;
  t["spec"]["parties"][0]["alsoUndeclared"] = true;
  auto created = call("POST", kTasks, t);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_FALSE(created.body["spec"].contains("undeclared"));
  EXPECT_FALSE(created.body["spec"]["parties"][0].contains("alsoUndeclared"));
  EXPECT_NE(created.headers["warning"].find("unknown field"), std::string::npos);
  EXPECT_EQ(created.body["metadata"]["labels"],
            t["metadata"]["labels"]); // metadata is never pruned

  t["metadata"]["name"] = "strict";
  auto strict = call("POST", std::string(kTasks) + "?fieldValidation=Strict", t);
  EXPECT_EQ(strict.status, 400);
  EXPECT_NE(strict.body["message"].get<std::string>().find("unknown field \"spec.undeclared\""),
            std::string::npos)
      << strict.body;

  json bad = exampleTask();
  bad["metadata"]["name"] = "bad";
  bad["spec"].erase("parties");
  bad["spec"]["initiator"] = 7;
  auto invalid = call("POST", kTasks, bad);
  EXPECT_EQ(invalid.status, 422);
  EXPECT_EQ(invalid.body["reason"], "Invalid");
  std::set<std::string> fields;
  for (const auto& c : invalid.body["details"]["causes"])
    fields.insert(c["field"]);
  EXPECT_EQ(fields, (std::set<std::string>{"spec.initiator", "spec.parties"}));

  // Timing fields: declared (kept), typed (date-time), and a new entry needs its required fields.
  std::string item = std::string(kTasks) + "/secretflow-task-psi";
  json timeline = {{"status",
                    {{"podStatuses",
                      {{"alice/p-0",
                        {{"namespace", "alice"},
                         {"podName", "p-0"},
                         {"podPhase", "Running"},
                         {"createTime", "2024-05-20T08:00:00Z"},
                         {"scheduleTime", "2024-05-20T08:00:01Z"},
                         {"startTime", "2024-05-20T08:00:02+08:00"},
                         {"readyTime", "2024-05-20T08:00:09.5Z"},
                         {"bogus", 1}}}}},
                     {"serviceStatuses",
                      {{"alice/s",
                        {{"namespace", "alice"},
                         {"serviceName", "s"},
                         {"createTime", "2024-05-20T08:00:00Z"},
                         {"readyTime", "2024-05-20T08:00:10Z"}}}}}}}};
  auto st = call("PATCH", item + "/status", timeline, kMerge);
  ASSERT_EQ(st.status, 200) << st.body;
  auto entry = st.body["status"]["podStatuses"]["alice/p-0"];
  EXPECT_EQ(entry["readyTime"], "2024-05-20T08:00:09.5Z");
  EXPECT_EQ(entry["scheduleTime"], "2024-05-20T08:00:01Z");
  EXPECT_FALSE(entry.contains("bogus"));
  EXPECT_EQ(st.body["status"]["serviceStatuses"]["alice/s"]["readyTime"], "2024-05-20T08:00:10Z");
  auto noPhase = call(
      "PATCH", item + "/status",
      {{"status", {{"podStatuses", {{"bob/p-0", {{"namespace", "bob"}, {"podName", "p-0"}}}}}}}},
      kMerge);
  EXPECT_EQ(noPhase.status, 422);
  EXPECT_NE(noPhase.body["message"].get<std::string>().find(
                "status.podStatuses.bob/p-0.podPhase: Required value"),
            std::string::npos)
      << noPhase.body;
  auto badTime =
      call("PATCH", item + "/status", {{"status", {{"startTime", "yesterday"}}}}, kMerge);
  EXPECT_EQ(badTime.status, 422);
  // null deletes a map key in a merge patch
  auto removed = call("PATCH", item + "/status",
                      {{"status", {{"podStatuses", {{"alice/p-0", nullptr}}}}}}, kMerge);
  EXPECT_FALSE(removed.body["status"]["podStatuses"].contains("alice/p-0"));
}

TEST_F(ApiServerTest, PatchFormats) {
  call("POST", kTasks, exampleTask());
  std::string item = std::string(kTasks) + "/secretflow-task-psi";
  auto smp = call("PATCH", item, {{"spec", {{"initiator", "bob"}}}}, kStrategic);
  EXPECT_EQ(smp.status, 415);
  EXPECT_EQ(smp.body["reason"], "UnsupportedMediaType");
  EXPECT_EQ(
      smp.body["message"],
      "the body of the request was in an unknown format - accepted media types include: "
      "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
  auto jp = call("PATCH", item,
                 json::array({{{"op", "test"}, {"path", "/spec/initiator"}, {"value", "alice"}},
                              {{"op", "replace"}, {"path", "/spec/initiator"}, {"value", "bob"}}}),
                 kJsonPatch);
  ASSERT_EQ(jp.status, 200) << jp.body;
  EXPECT_EQ(jp.body["spec"]["initiator"], "bob");
  auto failedTest = call(
      "PATCH", item,
      json::array({{{"op", "test"}, {"path", "/spec/initiator"}, {"value", "alice"}}}), kJsonPatch);
  EXPECT_EQ(failedTest.status, 422);

  // Strategic merge on a built-in kind merges lists by their merge keys.
  json p = pod("web");
  p["spec"]["containers"] = {{{"name", "a"},
                              {"image", "x"},
                              {"ports", {{{"containerPort", 80}}, {{"containerPort", 81}}}}},
                             {{"name", "b"}, {"image", "y"}}};
  ASSERT_EQ(call("POST", kPods, p).status, 201);
  auto merged = call("PATCH", std::string(kPods) + "/web",
                     {{"spec",
                       {{"containers",
                         {{{"name", "a"},
                           {"image", "x2"},
                           {"ports", {{{"containerPort", 81}, {"$patch", "delete"}}}}}}}}}},
                     kStrategic);
  ASSERT_EQ(merged.status, 200) << merged.body;
  auto containers = merged.body["spec"]["containers"];
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0]["image"], "x2");
  EXPECT_EQ(containers[0]["ports"], json::parse(R"([{"containerPort":80}])"));
  EXPECT_EQ(containers[1]["name"], "b");
  auto cond =
      call("PATCH", std::string(kPods) + "/web/status",
           {{"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}}, kStrategic);
  auto cond2 = call(
      "PATCH", std::string(kPods) + "/web/status",
      {{"status", {{"conditions", {{{"type", "PodScheduled"}, {"status", "True"}}}}}}}, kStrategic);
  EXPECT_EQ(cond2.body["status"]["conditions"].size(), 2u) << cond2.body;
  EXPECT_EQ(cond.body["spec"], cond2.body["spec"]);
  EXPECT_EQ(call("PATCH", std::string(kPods) + "/web", {{"a", 1}}, "text/plain").status, 415);
}

TEST_F(ApiServerTest, SelectorsAndPagination) {
  for (int i = 0; i < 7; ++i)
    ASSERT_EQ(call("POST", kPods,
                   pod("p" + std::to_string(i),
                       {{"tier", i % 2 ? "web" : "db"}, {"n", std::to_string(i)}}))
                  .status,
              201);
  EXPECT_EQ(call("GET", std::string(kPods) + "?labelSelector=tier%3Dweb").body["items"].size(), 3u);
  EXPECT_EQ(call("GET", std::string(kPods) + "?labelSelector=tier!%3Dweb").body["items"].size(),
            4u);
  EXPECT_EQ(
      call("GET", std::string(kPods) + "?labelSelector=n%20in%20(1,2,9)").body["items"].size(), 2u);
  EXPECT_EQ(call("GET", std::string(kPods) + "?labelSelector=!tier").body["items"].size(), 0u);
  EXPECT_EQ(call("GET", "/api/v1/pods?fieldSelector=metadata.name%3Dp3").body["items"].size(), 1u);
  EXPECT_EQ(call("GET", "/api/v1/pods?fieldSelector=metadata.namespace%3Dbob").body["items"].size(),
            0u);
  EXPECT_EQ(call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dx").status, 400);
  // Events take their own field labels (what kubectl describe and the timeline CLI ask).
  for (auto [name, kind, uid] : {std::tuple{"e1", "Pod", "u1"}, std::tuple{"e2", "Pod", "u2"},
                                 std::tuple{"e3", "Service", "u1"}})
    ASSERT_EQ(call("POST", "/api/v1/namespaces/alice/events",
                   {{"apiVersion", "v1"},
                    {"kind", "Event"},
                    {"metadata", {{"name", name}}},
                    {"involvedObject", {{"kind", kind}, {"name", "web"}, {"uid", uid}}},
                    {"reason", "Pulled"},
                    {"source", {{"component", "kubelet"}}}})
                  .status,
              201);
  const std::string events = "/api/v1/namespaces/alice/events?fieldSelector=";
  EXPECT_EQ(call("GET", events + "involvedObject.kind%3DPod,involvedObject.name%3Dweb")
                .body["items"]
                .size(),
            2u);
  EXPECT_EQ(call("GET", events + "involvedObject.uid%3Du1,reason%3DPulled").body["items"].size(),
            2u);
  EXPECT_EQ(
      call("GET", events + "source%3Dkubelet,involvedObject.kind!%3DPod").body["items"].size(), 1u);
  EXPECT_EQ(call("GET", std::string(kPods) + "?fieldSelector=involvedObject.name%3Dweb").status,
            400);
  EXPECT_EQ(call("GET", std::string(kPods) + "?labelSelector=%3D%3D").status, 400);

  std::vector<std::string> names;
  std::string cont;
  int pages = 0;
  do {
    auto page =
        call("GET", std::string(kPods) + "?limit=3" + (cont.empty() ? "" : "&continue=" + cont))
            .body;
    for (const auto& item : page["items"])
      names.push_back(item["metadata"]["name"]);
    cont = page["metadata"].value("continue", "");
    ++pages;
  } while (!cont.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4", "p5", "p6"}));
}

TEST_F(ApiServerTest, WatchReplaysThenFollowsWithOneEventPerLine) {
  call("POST", kPods, pod("a"));
  test::LineStream w(port_, std::string(kPods) + "?watch=True&resourceVersion=0");
  EXPECT_EQ(w.status(), 200);
  EXPECT_EQ(w.headers().at("transfer-encoding"), "chunked");
  auto first = json::parse(w.next().value());
  EXPECT_EQ(first["type"], "ADDED");
  EXPECT_EQ(first["object"]["metadata"]["name"], "a");
  call("POST", kPods, pod("b"));
  call("PATCH", std::string(kPods) + "/b", {{"metadata", {{"labels", {{"x", "1"}}}}}}, kMerge);
  call("DELETE", std::string(kPods) + "/b");
  std::vector<std::string> types;
  types.reserve(3);
  for (int i = 0; i < 3; ++i)
    types.push_back(json::parse(w.next().value())["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"}));
}

TEST_F(ApiServerTest, WatchResumesFromAResourceVersion) {
  auto a = call("POST", kPods, pod("a")).body;
  call("POST", kPods, pod("b"));
  call("POST", kTasks, exampleTask()); // another resource: not in this watch
  call("POST", kPods, pod("c"));
  test::LineStream w(port_, std::string(kPods) + "?watch=1&resourceVersion=" + rvOf(a));
  EXPECT_EQ(json::parse(w.next().value())["object"]["metadata"]["name"], "b");
  EXPECT_EQ(json::parse(w.next().value())["object"]["metadata"]["name"], "c");
  EXPECT_FALSE(w.next(0.2).has_value());
}

TEST_F(ApiServerTest, WatchFromCompactedResourceVersionEndsWith410) {
  auto a = call("POST", kPods, pod("a")).body;
  call("POST", kPods, pod("b"));
  EXPECT_EQ(call("POST", "/debug/faults/compact").status, 200);
  test::LineStream w(port_, std::string(kPods) + "?watch=true&resourceVersion=" + rvOf(a));
  EXPECT_EQ(w.status(), 200);
  auto ev = json::parse(w.next().value());
  EXPECT_EQ(ev["type"], "ERROR");
  EXPECT_EQ(ev["object"]["kind"], "Status");
  EXPECT_EQ(ev["object"]["code"], 410);
  EXPECT_EQ(ev["object"]["reason"], "Expired");
  EXPECT_FALSE(w.next(2).has_value());
  EXPECT_TRUE(w.ended());
}

TEST_F(ApiServerTest, WatchBookmarksAndTimeout) {
  auto a = call("POST", kPods, pod("a")).body;
  test::LineStream w(
      port_,
      std::string(kPods) +
          "?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=" + rvOf(a));
  auto ev = json::parse(w.next().value());
  EXPECT_EQ(ev["type"], "BOOKMARK");
  EXPECT_EQ(ev["object"]["kind"], "Pod");
  EXPECT_EQ(ev["object"]["apiVersion"], "v1");
  EXPECT_EQ(ev["object"]["metadata"]["resourceVersion"], rvOf(a));
  auto start = std::chrono::steady_clock::now();
  while (w.next(3).has_value()) {
  }
  EXPECT_TRUE(w.ended()); // timeoutSeconds ended the stream
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST_F(ApiServerTest, WatchRejectsSendInitialEventsAndBadBooleans) {
  auto r = call("GET", std::string(kPods) +
                           "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(call("GET", std::string(kPods) + "?watch=maybe").status, 400);
}

TEST_F(ApiServerTest, SlowWatcherIsClosedWithoutBlockingOthers) {
  stop();
  runtime_ = std::make_unique<Runtime>(2);
  ServerOptions o;
  o.api.watchQueueCapacity = 20;
  start(o);
  auto slow =
      server_->store().watch({server_->registry().find("", "v1", "pods"), "", {}, {}}, "", 20);
  ASSERT_TRUE(slow.ok());
  test::LineStream fast(port_, std::string(kPods) + "?watch=true");
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(call("POST", kPods, pod("p" + std::to_string(i))).status, 201); // writers never wait
  int seen = 0;
  while (seen < 100 && fast.next(5))
    ++seen;
  EXPECT_EQ(seen, 100);
  EXPECT_TRUE((slow.value())->overflowed());
}

// A server going down closes every connection, kept-alive and watching ones included; start()
// again serves the same address and the same objects (a restart).
TEST_F(ApiServerTest, StopClosesEveryConnectionAndStartRestarts) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  ASSERT_EQ(call("POST", kPods, pod("a")).status, 201);
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket idle(io);
  idle.connect({boost::asio::ip::make_address("127.0.0.1"), port_});
  timeval limit{10, 0}; // a read that would hang fails instead
  ::setsockopt(idle.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  http::request<http::empty_body> req(http::verb::get, kPods, 11);
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(true);
  http::write(idle, req);
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(idle, buf, res);
  ASSERT_EQ(res.result_int(), 200);
  ASSERT_TRUE(res.keep_alive());
  test::LineStream w(port_, std::string(kPods) + "?watch=true");
  ASSERT_TRUE(w.next().has_value()); // the replayed ADDED: the watch is open

  server_->stop();
  std::array<char, 64> byte{};
  beast::error_code ec;
  idle.read_some(boost::asio::buffer(byte), ec);
  EXPECT_TRUE(ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset)
      << ec.message();
  EXPECT_FALSE(w.next().has_value());
  EXPECT_TRUE(w.ended());
  EXPECT_TRUE(test::eventually([&] { // the listener closes on its own executor, soon after
    boost::asio::ip::tcp::socket probe(io);
    beast::error_code refused;
    probe.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, refused);
    return refused == boost::asio::error::connection_refused;
  }));

  auto again = server_->start();
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->port(), port_);
  EXPECT_EQ(call("GET", std::string(kPods) + "/a").status, 200);
}

// The control-plane objects as upstream Kuscia writes them (tests/fixtures/control-plane, one p2p
// story) are kept unchanged: created as a client does (without the server's metadata), the
// status written through the status subresource where the kind has one, read back field for
// field; the cluster-scoped kinds live outside namespaces.
TEST_F(ApiServerTest, KusciasControlPlaneObjectsAreKeptAsUpstreamWritesThem) {
  ASSERT_EQ(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "bob"}}}}).status, 201);
  const std::map<std::string, std::pair<std::string, bool>> kinds = {
      {"KusciaJob", {"kusciajobs", true}},
      {"KusciaTask", {"kusciatasks", true}},
      {"KusciaTaskSummary", {"kusciatasksummaries", false}},
      {"TaskResource", {"taskresources", false}},
      {"TaskResourceGroup", {"taskresourcegroups", true}},
      {"ClusterDomainRoute", {"clusterdomainroutes", true}}};
  int created = 0;
  for (const auto& file : std::filesystem::directory_iterator(std::string(KH_SOURCE_DIR) +
                                                              "/tests/fixtures/control-plane")) {
    SCOPED_TRACE(file.path().filename().string());
    const json example = json::parse(test::readFile(file.path().string()));
    const auto& [plural, statusSubresource] = kinds.at(example["kind"]);
    const std::string ns = example["metadata"].value("namespace", "");
    const std::string base = "/apis/kuscia.secretflow/v1alpha1/" +
                             (ns.empty() ? "" : "namespaces/" + ns + "/") + plural + "/";
    if (ns == "cross-domain" && plural == "kusciajobs") // two examples of one job: one at a time
      call("DELETE", base + example["metadata"]["name"].get<std::string>());
    json object = example;
    for (const char* serverOwned : {"uid", "resourceVersion", "generation", "creationTimestamp"})
      object["metadata"].erase(serverOwned);
    auto r = call("POST", base, object);
    ASSERT_EQ(r.status, 201) << r.body.dump();
    if (statusSubresource) {
      EXPECT_FALSE(r.body.contains("status")) << "a create sets no status";
      object = r.body;
      object["status"] = example["status"];
      r = call("PUT", base + object["metadata"]["name"].get<std::string>() + "/status", object);
      ASSERT_EQ(r.status, 200) << r.body.dump();
    }
    auto got = call("GET", base + example["metadata"]["name"].get<std::string>()).body;
    for (const char* part : {"spec", "status"})
      EXPECT_EQ(got[part], example[part]) << part;
    for (const char* meta : {"labels", "annotations", "ownerReferences"})
      EXPECT_EQ(got["metadata"].value(meta, json()), example["metadata"].value(meta, json()));
    ++created;
  }
  EXPECT_EQ(created, 8);
  // Cluster-scoped: listed at the group's root, not found under a namespace.
  auto trgs = call("GET", "/apis/kuscia.secretflow/v1alpha1/taskresourcegroups").body;
  ASSERT_EQ(trgs["items"].size(), 1u);
  EXPECT_EQ(trgs["items"][0]["status"]["phase"], "Reserving");
  EXPECT_EQ(
      call("GET", "/apis/kuscia.secretflow/v1alpha1/namespaces/alice/clusterdomainroutes").status,
      404);
  auto trs = call("GET", "/apis/kuscia.secretflow/v1alpha1/taskresources").body;
  EXPECT_EQ(trs["items"].size(), 2u);
}

TEST_F(ApiServerTest, FaultInjection) {
  EXPECT_EQ(call("POST", "/debug/faults/respond?path=/api/v1/namespaces/alice/"
                         "pods&status=429&count=2&retryAfter=3")
                .status,
            200);
  auto r1 = call("GET", kPods);
  EXPECT_EQ(r1.status, 429);
  EXPECT_EQ(r1.headers["retry-after"], "3");
  EXPECT_EQ(call("GET", kPods).status, 429);
  EXPECT_EQ(call("GET", kPods).status, 200);
  call("POST", "/debug/faults/respond?path=/api/v1&status=503");
  EXPECT_EQ(call("GET", kPods).status, 503);

  call("POST", "/debug/faults/reset");
  call("POST", "/debug/faults/latency?ms=300");
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(call("GET", kPods).status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
  call("POST", "/debug/faults/reset");

  test::LineStream w(port_, std::string(kPods) + "?watch=true");
  EXPECT_TRUE(test::eventually([&] { return server_->store().watcherCount() == 1; }));
  auto dropped = call("POST", "/debug/faults/drop-watches");
  EXPECT_EQ(dropped.body["message"], "dropped 1 watch(es)");
  EXPECT_FALSE(w.next(2).has_value());
  EXPECT_TRUE(w.ended());
}

TEST(ApiServerTlsTest, RequiresTheBearerTokenAndWritesAKubeconfig) {
  std::ostringstream out;
  LogManager logs(LogFormat::kText, spdlog::level::warn, out);
  SystemClock clock;
  Runtime runtime(1);
  ServerOptions o;
  o.tls = true;
  o.token = "s3cret";
  ApiServer server(runtime.io(), clock, logs.logger("apiserver"), o);
  auto ep = server.start();
  ASSERT_TRUE(ep.ok()) << ep.error();
  runtime.start();
  EXPECT_EQ(server.url().rfind("https://127.0.0.1:", 0), 0u);
  auto kc = server.kubeconfig();
  EXPECT_NE(kc.find("certificate-authority-data: "), std::string::npos);
  EXPECT_NE(kc.find("token: s3cret"), std::string::npos);
  EXPECT_NE(server.caPem().find("BEGIN CERTIFICATE"), std::string::npos);
  // The kubeconfig it writes is one kuscia-host's own loader accepts.
  test::TempDir dir;
  ASSERT_TRUE(server.writeKubeconfig(dir.file("kc")).ok());
  auto access = kube::loadKubeconfig(dir.file("kc"));
  ASSERT_TRUE(access.ok()) << access.error();
  EXPECT_EQ(access->server, server.url());
  EXPECT_EQ(access->caPem, server.caPem());
  EXPECT_EQ(access->bearerToken().value(), "s3cret");
  // Real TLS clients (kubectl, python) are exercised in tests/e2e; here: no plain HTTP on a TLS
  // port.
  auto plain = test::rawExchange(ep->port(), "GET /version HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(plain.find("HTTP/1.1 200"), std::string::npos);
  server.stop();
  runtime.stop();
}

} // namespace
} // namespace kuscia_host::apiserver
