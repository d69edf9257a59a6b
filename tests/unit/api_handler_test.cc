// The embedded API server's semantics without a socket: the API handler driven directly, as the
// HTTP layer drives it.
#include "apiserver/api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "apiserver/table.h"
#include "runtime/clock.h"

namespace kuscia_host::apiserver {
namespace {

using nlohmann::json;

class ApiHandlerTest : public ::testing::Test {
protected:
  ApiResponse call(const std::string& method, const std::string& path, const json& body = nullptr,
                   std::map<std::string, std::string> query = {}, const std::string& accept = "") {
    ApiRequest r;
    r.method = method;
    r.path = path;
    r.query = std::move(query);
    r.accept = accept;
    r.contentType = method == "PATCH" ? "application/merge-patch+json" : "application/json";
    if (!body.is_null()) r.body = body.dump();
    return handler_.handle(r);
  }
  json pod(const std::string& name) {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}}},
            {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}};
  }

  ResourceRegistry registry_ = ResourceRegistry::withDefaults();
  Store store_{100};
  ManualClock clock_{int64_t{1716192000} * 1000000000}; // 2024-05-20T08:00:00Z
  ApiHandler handler_{registry_, store_, clock_, {}};
};

TEST_F(ApiHandlerTest, BootstrapCreatesTheNamespacesEveryClusterHasOnce) {
  handler_.bootstrap();
  uint64_t rv = store_.currentRv();
  handler_.bootstrap(); // a restart keeps them, writes nothing
  EXPECT_EQ(store_.currentRv(), rv);
  for (const char* ns : {"default", "kube-system"})
    EXPECT_EQ(call("GET", std::string("/api/v1/namespaces/") + ns).status, 200) << ns;
}

// YAML is bytes, JSON text is UTF-8: an apply patch whose YAML holds bytes that are not UTF-8 is
// refused as undecodable (Kubernetes' YAML decoder refuses it too), and nothing is stored.
TEST_F(ApiHandlerTest, AnApplyPatchThatIsNotUtf8IsABadRequest) {
  handler_.bootstrap();
  uint64_t rv = store_.currentRv();
  ApiRequest r;
  r.method = "PATCH";
  r.path = "/api/v1/namespaces/default/configmaps/x";
  r.query = {{"fieldManager", "m"}};
  r.contentType = "application/apply-patch+yaml";
  r.body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: \"caf\xff\"}\n";
  auto res = handler_.handle(r);
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_NE(res.body.find("not valid UTF-8 text"), std::string::npos) << res.body;
  EXPECT_EQ(store_.currentRv(), rv);
  // Two-, three- and four-byte characters are UTF-8.
  r.body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {caf\xc3\xa9: "
           "\"\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82\"}\n";
  res = handler_.handle(r);
  EXPECT_EQ(res.status, 201) << res.body;
  EXPECT_EQ(json::parse(res.body)["data"]["caf\xc3\xa9"],
            "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82");
}

TEST_F(ApiHandlerTest, AWatchIsAStreamTheHandlerOwns) {
  handler_.bootstrap();
  ASSERT_EQ(call("POST", "/api/v1/namespaces/default/pods", pod("a")).status, 201);
  auto w = call("GET", "/api/v1/namespaces/default/pods", nullptr,
                {{"watch", "True"}, {"resourceVersion", "0"}, {"allowWatchBookmarks", "1"}});
  ASSERT_EQ(w.status, 200);
  ASSERT_TRUE(w.watch);
  EXPECT_TRUE(w.watch->bookmarks());
  std::string chunk;
  EXPECT_EQ(w.watch->next(chunk), httpd::ChunkSource::Next::kData);
  EXPECT_EQ(json::parse(chunk)["type"], "ADDED");
  chunk.clear();
  EXPECT_EQ(w.watch->next(chunk), httpd::ChunkSource::Next::kIdle);
  w.watch->closed(); // the session ends it: the store forgets the watcher
  EXPECT_EQ(store_.watcherCount(), 0u);
  // A malformed boolean is a 400 for watch as for every parameter.
  EXPECT_EQ(call("GET", "/api/v1/pods", nullptr, {{"watch", "yes"}}).status, 400);
}

TEST_F(ApiHandlerTest, AResourceVersionNewerThanTheStoreIsTooLarge) {
  handler_.bootstrap();
  auto r = call("GET", "/api/v1/pods", nullptr, {{"watch", "true"}, {"resourceVersion", "999"}});
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(r.waitsForRv, 999u);
  EXPECT_NE(r.body.find("ResourceVersionTooLarge"), std::string::npos) << r.body;
  EXPECT_EQ(call("GET", "/api/v1/pods", nullptr, {{"resourceVersion", "999"}}).status, 504);
  EXPECT_EQ(call("GET", "/api/v1/pods", nullptr, {{"resourceVersion", "0"}}).status, 200);
}

TEST_F(ApiHandlerTest, TablesCarryTheColumnsKubectlPrints) {
  handler_.bootstrap();
  ASSERT_EQ(call("POST", "/api/v1/namespaces/default/pods", pod("a")).status, 201);
  clock_.advanceNanos(int64_t{125} * 1000000000);
  auto r = call("GET", "/api/v1/namespaces/default/pods", nullptr, {},
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.contentType, "application/json;as=Table;v=v1;g=meta.k8s.io");
  json t = json::parse(r.body);
  EXPECT_EQ(t["kind"], "Table");
  std::vector<std::string> names;
  for (const auto& c : t["columnDefinitions"])
    if (c["priority"] == 0) names.push_back(c["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"Name", "Ready", "Status", "Restarts", "Age"}));
  EXPECT_EQ(t["rows"][0]["cells"],
            json::parse(R"(["a","0/1","Pending",0,"2m5s","<none>","<none>"])"));
  // A Table watch: each event a one-row Table, the columns in the first only (kubectl -w).
  auto w = call("GET", "/api/v1/namespaces/default/pods", nullptr,
                {{"watch", "1"}, {"resourceVersion", "0"}},
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  ASSERT_TRUE(w.watch);
  EXPECT_EQ(w.contentType, "application/json;as=Table;v=v1;g=meta.k8s.io");
  ASSERT_EQ(call("POST", "/api/v1/namespaces/default/pods", pod("b")).status, 201);
  std::string chunk;
  ASSERT_EQ(w.watch->next(chunk), httpd::ChunkSource::Next::kData);
  std::vector<json> events;
  for (std::size_t start = 0, nl; (nl = chunk.find('\n', start)) != std::string::npos;
       start = nl + 1)
    events.push_back(json::parse(chunk.substr(start, nl - start)));
  ASSERT_EQ(events.size(), 2u) << chunk;
  EXPECT_EQ(events[0]["object"]["kind"], "Table");
  EXPECT_EQ(events[0]["object"]["columnDefinitions"].size(), 7u);
  EXPECT_TRUE(events[1]["object"]["columnDefinitions"].empty());
  EXPECT_EQ(events[1]["object"]["rows"][0]["cells"][0], "b");
  w.watch->closed();
  // A service's ports as kubectl prints them: each port/protocol, TCP when none is named.
  json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", "s"}, {"namespace", "default"}}},
              {"spec",
               {{"type", "ClusterIP"},
                {"clusterIP", "10.0.0.7"},
                {"ports", {{{"port", 80}}, {{"port", 53}, {"protocol", "UDP"}}}}}}};
  ASSERT_EQ(call("POST", "/api/v1/namespaces/default/services", svc).status, 201);
  auto s = call("GET", "/api/v1/namespaces/default/services", nullptr, {},
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  ASSERT_EQ(s.status, 200);
  json st = json::parse(s.body);
  ASSERT_EQ(st["rows"].size(), 1u) << s.body;
  EXPECT_EQ(st["rows"][0]["cells"][0], "s");
  EXPECT_EQ(st["rows"][0]["cells"][2], "10.0.0.7");
  EXPECT_EQ(st["rows"][0]["cells"][4], "80/TCP,53/UDP");
  EXPECT_EQ(humanDuration(59), "59s");
  EXPECT_EQ(humanDuration(600), "10m");
  EXPECT_EQ(humanDuration(3 * 86400 + 7200), "3d2h");
}

} // namespace
} // namespace kuscia_host::apiserver
