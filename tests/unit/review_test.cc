// The embedded API server's TokenReview and SubjectAccessReview answers (apiserver/review.h):
// kube-apiserver's token file format and RBAC as Kubernetes evaluates it.
#include "apiserver/review.h"

#include <gtest/gtest.h>

namespace kuscia_host::apiserver {
namespace {

using nlohmann::json;

TEST(ReviewTest, TokenAuthFileAsKubeApiserverReadsIt) {
  auto ok = parseTokenAuthFile("# comment\nt1,prometheus,u1,\"monitoring,ops\"\n\nt2, eve ,u2\n");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->at("t1").user, "prometheus");
  EXPECT_EQ(ok->at("t1").groups, (std::vector<std::string>{"monitoring", "ops"}));
  EXPECT_EQ(ok->at("t2").user, "eve");
  EXPECT_TRUE(ok->at("t2").groups.empty());
  for (const char* bad : {"t1,user\n", "t1,user,uid,\"open\n", ",user,uid\n", "t,a,1\nt,b,2\n"}) {
    auto r = parseTokenAuthFile(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().find("line "), 0u) << r.error();
  }
  json review = {{"spec", {{"token", "t1"}}}};
  auto answer = answerTokenReview(review, *ok);
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)["status"]["user"]["username"], "prometheus");
  EXPECT_EQ((*answer)["status"]["user"]["groups"].back(), "system:authenticated");
  EXPECT_FALSE((*answer)["spec"].contains("token")); // never echoed
  EXPECT_EQ((*answerTokenReview({{"spec", {{"token", "nope"}}}}, *ok))["status"]["authenticated"],
            false);
  EXPECT_FALSE(answerTokenReview(json::object(), *ok));
}

TEST(ReviewTest, RbacForNonResourceUrlsAndResources) {
  std::map<std::string, std::vector<json>> stored = {
      {"clusterroles",
       {{{"metadata", {{"name", "viewer"}}},
         {"rules",
          {{{"nonResourceURLs", {"/metrics", "/api/v1/timelines*"}}, {"verbs", {"get"}}}}}},
        {{"metadata", {{"name", "pod-reader"}}},
         {"rules",
          {{{"apiGroups", {""}},
            {"resources", {"pods", "pods/status"}},
            {"verbs", {"get", "list"}}}}}}}},
      {"clusterrolebindings",
       {{{"metadata", {{"name", "viewers"}}},
         {"roleRef", {{"kind", "ClusterRole"}, {"name", "viewer"}}},
         {"subjects",
          {{{"kind", "Group"}, {"name", "monitoring"}},
           {{"kind", "ServiceAccount"}, {"name", "prometheus"}, {"namespace", "mon"}}}}}}},
      {"rolebindings",
       {{{"metadata", {{"name", "alice-pods"}, {"namespace", "alice"}}},
         {"roleRef", {{"kind", "ClusterRole"}, {"name", "pod-reader"}}},
         {"subjects", {{{"kind", "User"}, {"name", "eve"}}}}}}}};
  RbacLister list = [&](const std::string& plural, const std::string& ns) {
    std::vector<json> out;
    for (const auto& o : stored[plural])
      if (ns.empty() || o["metadata"].value("namespace", "") == ns) out.push_back(o);
    return out;
  };
  auto can = [&](AccessRequest r) {
    std::string reason;
    return rbacAllows(r, list, reason);
  };
  AccessRequest metrics{"anyone", {"monitoring"}, "get", true, "/metrics"};
  EXPECT_TRUE(can(metrics));
  metrics.path = "/api/v1/timelines/t1"; // the prefix rule
  EXPECT_TRUE(can(metrics));
  metrics.path = "/debug";
  EXPECT_FALSE(can(metrics));
  EXPECT_TRUE(can({"system:serviceaccount:mon:prometheus", {}, "get", true, "/metrics"}));
  EXPECT_FALSE(can({"system:serviceaccount:other:prometheus", {}, "get", true, "/metrics"}));
  EXPECT_FALSE(can({"anyone", {"monitoring"}, "delete", true, "/metrics"}));
  // A RoleBinding grants in its namespace only, and never non-resource URLs.
  AccessRequest pods{"eve", {}, "list", false, "", "", "pods", "", "alice"};
  EXPECT_TRUE(can(pods));
  pods.namespaceName = "bob";
  EXPECT_FALSE(can(pods));
  pods.namespaceName = "alice";
  pods.subresource = "status";
  pods.verb = "get";
  EXPECT_TRUE(can(pods));
  pods.resource = "services";
  pods.subresource = "";
  EXPECT_FALSE(can(pods));
  EXPECT_FALSE(can({"eve", {}, "get", true, "/metrics"}));
  auto answer = answerSubjectAccessReview(
      {{"spec",
        {{"user", "x"},
         {"groups", {"monitoring"}},
         {"nonResourceAttributes", {{"path", "/metrics"}, {"verb", "get"}}}}}},
      list);
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)["status"]["allowed"], true);
  EXPECT_NE((*answer)["status"]["reason"].get<std::string>().find("viewers"), std::string::npos);
  EXPECT_FALSE(answerSubjectAccessReview({{"spec", {{"user", "x"}}}}, list)); // no attributes
}

} // namespace
} // namespace kuscia_host::apiserver
