// conformance: a plugin that exercises the host's side of the ABI and writes what it saw (one
// status code or outcome per check) to `reportFile` when it is destroyed. The same class runs in
// the real host (conformance.so) and in the SDK's fake host
// (tests/integration/conformance_test.cc), and the two reports must be equal: a plugin tested on
// the fake host behaves the same in production.
#pragma once

#include <kuscia_host/config_reader.hpp>
#include <kuscia_host/plugin.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace kuscia_host::tests {

class Conformance final : public sdk::Plugin {
public:
  Conformance(sdk::Host host, std::string_view /*domain*/, std::string_view config) : Plugin(host) {
    sdk::ConfigReader r(config, {{"reportFile", "string", "", "where the report goes"}});
    reportFile_ = r.string("reportFile", "");
    const kh_host_api_v1_t* api = host.api();
    report_["abi"] = std::to_string(api->abi_major) + "." + std::to_string(api->abi_minor);
    plain_ = subscribeCode("sub.plain", pods({"/metadata/labels/app"}));
    labelled_ = subscribeCode("sub.labels", pods({"/metadata/labels"}));
    sdk::Subscription s = pods({});
    s.version = "";
    subscribeCode("sub.no_version", s);
    s = pods({});
    s.scope = 99;
    subscribeCode("sub.bad_scope", s);
    s = pods({});
    s.scope = KH_SCOPE_NAMESPACE;
    subscribeCode("sub.namespace_missing", s);
    s = pods({});
    s.labelSelector = "app in (a";
    subscribeCode("sub.bad_selector", s);
    subscribeCode("sub.bad_pointer", pods({"metadata/name"}));
    subscribeCode("sub.bad_resource", [] {
      sdk::Subscription p;
      p.version = "v1";
      p.resource = "pods/../secrets";
      return p;
    }());
    report_["route.ok"] = code([&] { host.registerRoute("/api/v1/conformance/"); });
    report_["route.relative"] = code([&] { host.registerRoute("api/v1/other"); });
    report_["route.reserved"] = code([&] { host.registerRoute("/metrics/mine"); });
    counter_ = host.counter("conformance_checks_total", "checks run");
    report_["metric.plugin_label"] =
        code([&] { host.counter("conformance_bad_total", "declares plugin", {"plugin"}); });
    report_["metric.reshaped"] = code([&] { host.gauge("conformance_checks_total", "other"); });
    // ABI 1.5: one state per type, the same at every call, made once.
    auto& first = host.libraryState<Made>();
    auto& again = host.libraryState<Made>();
    auto& other = host.libraryState<OtherMade>();
    report_["library_state"] =
        std::string(&first == &again ? "same" : "different") + "/" +
        (static_cast<void*>(&other) != static_cast<void*>(&first) ? "per type" : "shared") + "/" +
        std::to_string(Made::made);
  }

  ~Conformance() override {
    report_["destroyed_after_results"] = pendingResult_ >= 0;
    if (!reportFile_.empty()) std::ofstream(reportFile_) << report_.dump(2) << "\n";
  }

  void onStart() override {
    host().setReady(false, "waiting for the pods");
    report_["sub.late"] = code([&] { host().subscribe(pods({"/metadata/name"})); });
    report_["route.late"] = code([&] { host().registerRoute("/api/v1/later/"); });
    auto request = [&](const char* name, sdk::KubeRequest r) {
      report_[name] = code([&] { host().kubeRequest(r); });
    };
    request("req.bad_verb", patch("p", R"({})", [](sdk::KubeRequest& r) { r.verb = 9; }));
    request("req.bad_patch_type",
            patch("p", R"({})", [](sdk::KubeRequest& r) { r.patchType = 7; }));
    request("req.no_name", patch("", R"({})"));
    request("req.bad_json", patch("p", R"({"a":)"));
    request("req.merge_not_object", patch("p", R"([1])"));
    request("req.json_patch_not_array",
            patch("p", R"({})", [](sdk::KubeRequest& r) { r.patchType = KH_PATCH_JSON; }));
    request("req.bad_segment", patch("a/b", R"({})"));
    request("req.no_version", patch("p", R"({})", [](sdk::KubeRequest& r) { r.version = ""; }));
    request("req.create_bad_json",
            patch("", R"(not json)", [](sdk::KubeRequest& r) { r.verb = KH_KUBE_CREATE; }));
    report_["timer.cancel_unknown"] = host().cancelTimer(424242) ? "ok" : "not found";
    report_["cache.get_unknown_key"] =
        host().cacheGet(plain_, "alice/none", [](const sdk::Object&) {}) ? "found" : "absent";
    report_["cache.get_foreign_subscription"] =
        host().cacheGet(987654, "alice/p-a", [](const sdk::Object&) {}) ? "found" : "absent";
    report_["cache.list_selector_without_labels"] =
        host().cacheList(plain_, "app=a", [](const sdk::Object&) {});
    report_["cache.list_bad_selector"] =
        host().cacheList(labelled_, "app in (a", [](const sdk::Object&) {});
    counter_.add(-1); // ignored and counted as invalid by both hosts
    counter_.add(1, {"extra-label"});
  }

  void onEvent(const sdk::Event& e) override {
    if (e.type != KH_EVENT_SYNCED || e.subscriptionId != labelled_ || synced_) return;
    synced_ = true;
    int all = 0;
    int a = 0;
    report_["cache.list_all"] = host().cacheList(labelled_, "", [&](const sdk::Object&) { ++all; });
    report_["cache.list_selector"] =
        host().cacheList(labelled_, "app=a", [&](const sdk::Object& o) {
          ++a;
          report_["cache.list_selector_key"] = std::string(o.key);
        });
    report_["cache.list_counts"] = std::to_string(all) + "/" + std::to_string(a);
    report_["cache.get"] = host().cacheGet(labelled_, "alice/p-a",
                                           [&](const sdk::Object& o) {
                                             report_["cache.get_fields"] =
                                                 nlohmann::json::parse(o.fieldsJson);
                                           })
                               ? "found"
                               : "absent";
    // ABI 1.3: the answers to releases (the real host forgets asynchronously, and only once every
    // subscription released: what follows is not compared here).
    std::string rv;
    host().cacheGet(labelled_, "alice/p-b",
                    [&rv](const sdk::Object& o) { rv = std::string(o.resourceVersion); });
    report_["cache.release_unknown_key"] = host().cacheRelease(labelled_, "alice/none", "1");
    report_["cache.release_foreign_subscription"] = host().cacheRelease(987654, "alice/p-b", rv);
    report_["cache.release_stale"] = host().cacheRelease(labelled_, "alice/p-b", rv + "0");
    report_["cache.release"] = host().cacheRelease(labelled_, "alice/p-b", rv);
    // Completes only when the instance stops: the server keeps failing it with 503s.
    report_["req.pending"] = code([&] { host().kubeRequest(patch("conformance-pending", "{}")); });
    host().setReady(true);
  }

  void onStop() override {
    report_["req.after_stop"] = code([&] { host().kubeRequest(patch("p", "{}")); });
    report_["timer.after_stop"] = code([&] { host().startTimer(10); });
  }

  void onKubeResult(const sdk::KubeResult& r) override {
    pendingResult_ = r.httpCode;
    report_["req.pending_result"] = r.httpCode;
  }

  void onHttpRequest(const sdk::HttpRequest& req, sdk::HttpResponse& res) override {
    res.status = 200;
    res.body = nlohmann::json{{"path", std::string(req.path)}}.dump();
  }

private:
  struct Made {
    Made() { ++made; }
    static inline int made = 0;
  };
  struct OtherMade {};

  static sdk::Subscription pods(std::vector<std::string> fields) {
    sdk::Subscription s;
    s.version = "v1";
    s.resource = "pods";
    s.fields = std::move(fields);
    return s;
  }
  template <class Edit = void (*)(sdk::KubeRequest&)>
  static sdk::KubeRequest patch(
      const std::string& name, const std::string& body, Edit edit = [](sdk::KubeRequest&) {}) {
    sdk::KubeRequest r;
    r.version = "v1";
    r.resource = "pods";
    r.namespaceName = "alice";
    r.name = name;
    r.subresource = "status";
    r.body = body;
    edit(r);
    return r;
  }
  // "ok" or the status the host refused with.
  template <class Fn> static nlohmann::json code(Fn&& fn) {
    try {
      fn();
      return "ok";
    } catch (const sdk::HostError& e) {
      return e.status();
    }
  }
  // Subscribes, recording the outcome under `name`; the id (0 when refused).
  uint64_t subscribeCode(const std::string& name, const sdk::Subscription& s) {
    uint64_t id = 0;
    report_[name] = code([&] { id = host().subscribe(s); });
    return id;
  }

  std::string reportFile_;
  nlohmann::json report_ = nlohmann::json::object();
  uint64_t plain_ = 0, labelled_ = 0;
  sdk::Metric counter_;
  bool synced_ = false;
  int pendingResult_ = -1;
};

} // namespace kuscia_host::tests
