// What a pod and its Events tell of its startup beyond the KusciaTask's status (header-only; needs
// nlohmann/json): the image pull, the moment every container ran, and why each phase waited.
// task-timeline folds them in as the events arrive; `kuscia-host timeline` reads them from the
// cluster. Both use these functions, so both give the same answer.
//
//  - imagePullStartTime: the first Pulling Event; imagePullEndTime: the last Pulled Event (kubelet
//    and Kuscia's agent record both: "Pulling image ...", "Successfully pulled image ... in 12.3s"
//    or "Container image ... already present on machine"). An Event's time is its eventTime, else
//    lastTimestamp, else firstTimestamp. A missing Event leaves its time absent, never guessed.
//  - containersStartTime: the latest state.running.startedAt once every container runs.
//  - reasons: per phase of timeline_summary.h, the last reason it waited for (a failure or
//    back-off: FailedScheduling, ErrImagePull, BackOff, Unhealthy, ...), else the last event of
//    the phase (Scheduled, Pulled, Started).
#ifndef KUSCIA_HOST_POD_EVENTS_HPP
#define KUSCIA_HOST_POD_EVENTS_HPP

#include <kuscia_host/kube_text.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace kuscia_host::model::timeline {

// The phase an Event's reason belongs to (nullptr: none), and whether it says the pod waits.
struct EventPhase {
  const char* phase = nullptr;
  bool waiting = false;
};

inline bool mentionsImage(std::string_view message) {
  std::string lower(message);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("image") != std::string::npos;
}

// A Go duration's seconds ("1.6s", "8.000s", "1m2.5s", "500ms", "1h0m3s"): the longest prefix
// of `text` that is one; none when it starts with none.
inline std::optional<double> goDurationSeconds(std::string_view text) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"ms", 1e-3},
      {"s", 1},     {"m", 60},    {"h", 3600}};
  double total = 0;
  bool any = false;
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    double value = 0;
    try {
      value = std::stod(std::string(text.substr(start, i - start)));
    } catch (...) {
      return any ? std::optional<double>(total) : std::nullopt;
    }
    bool unit = false;
    for (auto [name, scale] : kUnits) // "ms" before "m", "ns" and "us" before "s"
      if (text.substr(i, name.size()) == name) {
        total += value * scale;
        i += name.size();
        unit = true;
        break;
      }
    if (!unit) break;
    any = true;
  }
  return any ? std::optional<double>(total) : std::nullopt;
}

// The pull's own duration in a Pulled Event's message: kubelet's and Kuscia's agent's
// "Successfully pulled image \"<image>\" in <Go duration>" (the kubelet may add " (<d> including
// waiting)"); none in other messages ("already present on machine").
inline std::optional<double> pulledSeconds(std::string_view message) {
  constexpr std::string_view kPulled = "ulled image";
  auto at = message.find(kPulled);
  if (at == std::string_view::npos) return std::nullopt;
  // The image's name is quoted and may hold " in ": the duration follows its closing quote.
  auto quote = message.find('"', at + kPulled.size());
  if (quote != std::string_view::npos) quote = message.find('"', quote + 1);
  std::size_t from = quote == std::string_view::npos ? at + kPulled.size() : quote + 1;
  constexpr std::string_view kIn = " in ";
  auto in = message.find(kIn, from);
  if (in == std::string_view::npos) return std::nullopt;
  return goDurationSeconds(message.substr(in + kIn.size()));
}

inline EventPhase eventPhase(std::string_view reason, std::string_view message) {
  if (reason == "FailedScheduling") return {"scheduling", true};
  if (reason == "Scheduled") return {"scheduling", false};
  if (reason == "Pulling" || reason == "Pulled") return {"pulling", false};
  if (reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "InspectFailed" ||
      reason == "ErrImageNeverPull")
    return {"pulling", true};
  if (reason == "Failed" || reason == "BackOff")
    return {mentionsImage(message) ? "pulling" : "starting", true};
  if (reason == "Created" || reason == "Started") return {"starting", false};
  if (reason == "FailedCreatePodSandBox" || reason == "FailedMount" ||
      reason == "CreateContainerError")
    return {"starting", true};
  if (reason == "Unhealthy") return {"readiness", true};
  return {};
}

// The phase a pod's waiting reason (a container's state.waiting.reason, a condition's reason)
// belongs to; `fallback` when the reason names none.
inline const char* waitingReasonPhase(std::string_view reason, const char* fallback) {
  if (reason == "Unschedulable") return "scheduling";
  if (reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "InvalidImageName" ||
      reason == "ErrImageNeverPull")
    return "pulling";
  if (reason == "ContainerCreating" || reason == "PodInitializing" ||
      reason == "CreateContainerError" || reason == "CreateContainerConfigError" ||
      reason == "CrashLoopBackOff" || reason == "RunContainerError")
    return "starting";
  if (reason == "ContainersNotReady" || reason == "ReadinessGatesNotReady") return "readiness";
  return fallback;
}

// An Event's time: eventTime, else lastTimestamp, else firstTimestamp.
inline std::optional<int64_t> eventTimeOf(const nlohmann::json& eventTime,
                                          const nlohmann::json& lastTimestamp,
                                          const nlohmann::json& firstTimestamp) {
  for (const auto* t : {&eventTime, &lastTimestamp, &firstTimestamp})
    if (t->is_string())
      if (auto ns = sdk::parseTime(t->get_ref<const std::string&>())) return ns;
  return std::nullopt;
}

// The latest container start once every container of the pod runs (containerStatuses).
inline std::optional<int64_t> containersStartTime(const nlohmann::json& containerStatuses) {
  if (!containerStatuses.is_array() || containerStatuses.empty()) return std::nullopt;
  std::optional<int64_t> latest;
  for (const auto& c : containerStatuses) {
    const nlohmann::json* started = nullptr;
    if (c.is_object() && c.contains("state") && c["state"].is_object() &&
        c["state"].contains("running") && c["state"]["running"].is_object() &&
        c["state"]["running"].contains("startedAt"))
      started = &c["state"]["running"]["startedAt"];
    if (started == nullptr || !started->is_string()) return std::nullopt;
    auto t = sdk::parseTime(started->get_ref<const std::string&>());
    if (!t) return std::nullopt;
    latest = latest ? std::max(*latest, *t) : *t;
  }
  return latest;
}

// What one pod's Events (and waiting reasons) said, folded in any order; duplicates are harmless.
class PodFacts {
public:
  struct Reason {
    std::string reason, message;
    int64_t at = 0;
    bool waiting = false;
  };

  // One Event of the pod. Returns whether anything changed.
  bool addEvent(std::string_view reason, std::string_view message, int64_t at) {
    bool changed = false;
    if (reason == "Pulling" && (!pullStart_ || at < *pullStart_)) {
      pullStart_ = at;
      changed = true;
    }
    if (reason == "Pulled" && (!pullEnd_ || at > *pullEnd_)) {
      pullEnd_ = at;
      changed = true;
    }
    EventPhase p = eventPhase(reason, message);
    if (p.phase != nullptr) changed |= addReason(p.phase, reason, message, at, p.waiting);
    return changed;
  }
  // A reason seen for `phase` at `at`: a waiting reason replaces an earlier one or any event of
  // the phase; another event only fills a phase without a waiting reason.
  bool addReason(const std::string& phase, std::string_view reason, std::string_view message,
                 int64_t at, bool waiting) {
    if (reason.empty()) return false;
    auto it = reasons_.find(phase);
    if (it != reasons_.end()) {
      const Reason& have = it->second;
      if (have.waiting && !waiting) return false;
      if (have.waiting == waiting && at < have.at) return false;
      // At the same instant (whole seconds), whatever the order they came in: the later step of
      // the lifecycle (Pulled over Pulling, Started over Created), then the greater text.
      if (have.waiting == waiting && at == have.at &&
          std::tuple(rank(reason), reason, message) <= std::tuple(rank(have.reason),
                                                                  std::string_view(have.reason),
                                                                  std::string_view(have.message)))
        return false;
    }
    reasons_[phase] = {std::string(reason), std::string(message), at, waiting};
    return true;
  }

  // The waiting reasons of a pod's containers (status.containerStatuses), seen at `now`, each for
  // its phase (waitingReasonPhase, else starting). A reason already kept waiting for its phase
  // keeps the time it was first seen. Returns whether anything changed.
  bool addContainersWaiting(const nlohmann::json& containerStatuses, int64_t now) {
    if (!containerStatuses.is_array()) return false;
    bool changed = false;
    for (const auto& c : containerStatuses) {
      if (!c.is_object() || !c.contains("state") || !c["state"].is_object()) continue;
      const nlohmann::json& state = c["state"];
      if (!state.contains("waiting") || !state["waiting"].is_object()) continue;
      const nlohmann::json& waiting = state["waiting"];
      changed |=
          addContainerWaiting(waiting.value("reason", ""), waiting.value("message", ""), now);
    }
    return changed;
  }
  // One container's waiting state (its reason and message), as addContainersWaiting reads each.
  bool addContainerWaiting(const std::string& reason, const std::string& message, int64_t now) {
    if (reason.empty()) return false;
    std::string phase = waitingReasonPhase(reason, "starting");
    auto known = reasons_.find(phase);
    if (known != reasons_.end() && known->second.waiting && known->second.reason == reason)
      return false;
    return addReason(phase, reason, message, now, true);
  }

  std::optional<int64_t> imagePullStart() const { return pullStart_; }
  // The order of the events of one phase in a pod's lifecycle.
  static int rank(std::string_view reason) {
    return reason == "Pulled" || reason == "Started" || reason == "Scheduled" ? 2
           : reason == "Pulling" || reason == "Created"                       ? 1
                                                                              : 0;
  }
  std::optional<int64_t> imagePullEnd() const { return pullEnd_; }
  bool empty() const { return !pullStart_ && !pullEnd_ && reasons_.empty(); }
  // The reason kept for each phase, with the time it was seen.
  const std::map<std::string, Reason>& reasons() const { return reasons_; }
  // {"<phase>": {"reason", "message"}} as the timeline document's entry holds it.
  nlohmann::json reasonsJson() const {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [phase, r] : reasons_) {
      nlohmann::json j = {{"reason", r.reason}};
      if (!r.message.empty()) j["message"] = r.message;
      out[phase] = std::move(j);
    }
    return out;
  }
  // Sets the entry's times and reasons (a status-like entry, before model::timeline::entry).
  void fill(nlohmann::json& entry) const {
    if (pullStart_)
      entry["imagePullStartTime"] = sdk::formatTime(*pullStart_, sdk::TimePrecision::kAsGiven);
    if (pullEnd_)
      entry["imagePullEndTime"] = sdk::formatTime(*pullEnd_, sdk::TimePrecision::kAsGiven);
    if (!reasons_.empty()) entry["reasons"] = reasonsJson();
  }

private:
  std::optional<int64_t> pullStart_, pullEnd_;
  std::map<std::string, Reason> reasons_;
};

} // namespace kuscia_host::model::timeline

#endif // KUSCIA_HOST_POD_EVENTS_HPP
