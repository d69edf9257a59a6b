#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/failure.h>
#include <kuscia_model/kept_facts.h>
#include <kuscia_model/kuscia.h>

#include <algorithm>
#include <array>
#include <initializer_list>

namespace kuscia_host::model::failure {

using nlohmann::json;

namespace {

constexpr std::array<const char*, kReasonCount> kNames = {
    "Misconfigured", "RouteNotReady",     "ResourceShortage", "ApprovalRejected", "ImagePull",
    "Unschedulable", "ReservationFailed", "OOMKilled",        "PeerNetwork",      "Crashed",
    "NotReady",      "PartnerFailed",     "Expired",          "Unknown"};

bool has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

bool oneOf(std::string_view reason, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), reason) != names.end();
}

bool anyIn(std::string_view text, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [text](std::string_view n) { return has(text, n); });
}

// The text between `before` and the next `after` in `text` ("" when either is missing).
std::string between(std::string_view text, std::string_view before, std::string_view after) {
  const std::size_t from = text.find(before);
  if (from == std::string_view::npos) return {};
  const std::size_t start = from + before.size();
  const std::size_t end = after.empty() ? text.size() : text.find(after, start);
  return end == std::string_view::npos ? std::string()
                                       : std::string(text.substr(start, end - start));
}

// The first word of `text` (up to a space, a comma, a semicolon or the end).
std::string firstWord(std::string_view text) {
  return std::string(text.substr(0, std::min(text.find_first_of(" ,;\n"), text.size())));
}

// Kuscia's terminationLog names the container's terminated reason in quotes:
// container[<c>] terminated state reason "<r>", message: "<m>".
bool terminatedWith(std::string_view message, std::string_view reason) {
  return has(message, std::string("reason \"") + std::string(reason) + "\"");
}

} // namespace

namespace {

// The length of the well-formed UTF-8 sequence at `i` (RFC 3629: no overlong form, no
// surrogate), 0 when there is none.
std::size_t sequenceAt(std::string_view t, std::size_t i) {
  const auto b = [&t](std::size_t k) { return static_cast<unsigned char>(t[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xC2 && c <= 0xDF   ? 2
                  : c >= 0xE0 && c <= 0xEF ? 3
                  : c >= 0xF0 && c <= 0xF4 ? 4
                                           : 0;
  if (n == 0 || i + n > t.size()) return 0;
  // The second byte's range depends on the first; the others are continuation bytes.
  const unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
  const unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

} // namespace

std::string excerpt(std::string_view text, std::size_t maxBytes) {
  static constexpr std::string_view kGap = " ... ";
  // Whole sequences only (bytes that are no UTF-8 are dropped: the excerpt is put in JSON), no
  // control character but newline and tab.
  std::string valid;
  valid.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequenceAt(text, i);
    if (n > 0) valid.append(text.substr(i, n));
    i += n > 0 ? n : 1;
  }
  std::string clean = boundedText(valid, valid.size() + 8);
  if (clean.size() <= maxBytes) return clean;
  if (maxBytes <= kGap.size() + 8) return boundedText(clean, maxBytes);
  const std::size_t room = maxBytes - kGap.size();
  std::size_t head = room / 4;
  std::size_t tail = clean.size() - (room - head);
  auto continuation = [&clean](std::size_t i) {
    return i < clean.size() && (static_cast<unsigned char>(clean[i]) & 0xC0) == 0x80;
  };
  while (head > 0 && continuation(head))
    --head;
  while (continuation(tail))
    ++tail;
  return clean.substr(0, head) + std::string(kGap) + clean.substr(tail);
}

const char* name(Reason r) {
  return kNames.at(static_cast<std::size_t>(r));
}

std::optional<Reason> reasonNamed(std::string_view n) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (n == kNames[i]) return static_cast<Reason>(i);
  return std::nullopt;
}

Reason reasonOf(const Evidence& e) {
  const std::string_view r = e.reason, m = e.message;
  if (oneOf(r, {"InvalidImageName", "CreateContainerConfigError", "ErrImageNeverPull"}) ||
      anyIn(m, {"InvalidImageName", "CreateContainerConfigError", "failed to get appImage"}))
    return Reason::kMisconfigured;
  // The task controller's pre-checks (kt/plugins): the routes between the parties, the nodes.
  if (has(m, "cdr-check ") && has(m, " failed with ")) return Reason::kRouteNotReady;
  if (has(m, "resource-check ")) return Reason::kResourceShortage;
  if (has(m, "approval reject") || r == "ApprovalReject") return Reason::kApprovalRejected;
  if (oneOf(r, {"ErrImagePull", "ImagePullBackOff", "ErrImagePullBackOff", "RegistryUnavailable",
                "ImageInspectError"}) ||
      anyIn(m, {"ErrImagePull", "ImagePullBackOff", "failed to pull image", "Failed to pull image",
                "Back-off pulling image", "failed to reserve container name"}))
    return Reason::kImagePull;
  // kuscia-scheduler and the TaskResourceGroup: the reservation across parties did not complete.
  if (anyIn(m,
            {"can not reserve resources", "less than the schedulable threshold", "reserve-failed"}))
    return Reason::kReservationFailed;
  if (oneOf(r, {"Unschedulable", "FailedScheduling"}) || has(m, "nodes are available"))
    return Reason::kUnschedulable;
  if (r == "OOMKilled" || terminatedWith(m, "OOMKilled")) return Reason::kOOMKilled;
  // The gateway's (Envoy's) answers to a peer it cannot reach, in a container's log.
  if (anyIn(m, {"delayed connect error", "upstream connect error", "stream_idle_timeout",
                "no healthy upstream", "upstream request timeout"}))
    return Reason::kPeerNetwork;
  if (oneOf(r, {"CrashLoopBackOff", "Error", "StartError", "ContainerCannotRun",
                "RunContainerError", "PreStartHookError", "PostStartHookError"}) ||
      terminatedWith(m, "Error") || terminatedWith(m, "StartError") ||
      anyIn(m, {"CrashLoopBackOff", "Back-off restarting failed container"}))
    return Reason::kCrashed;
  if (oneOf(r, {"Unhealthy", "ContainersNotReady"}) || has(m, "Readiness probe failed"))
    return Reason::kNotReady;
  // The task controller when too few parties are left: who failed, in brackets.
  if (!between(m, "failed party[", "]").empty()) return Reason::kPartnerFailed;
  if (r == "TaskResourceGroupExpired" ||
      anyIn(m, {"not scheduled within", "exceed it's lifecycle", "TaskResourceGroupExpired"}))
    return Reason::kExpired;
  return Reason::kUnknown;
}

Named namedIn(Reason r, const Evidence& e) {
  Named n;
  const std::string_view m = e.message;
  switch (r) {
  case Reason::kRouteNotReady: {
    // cdr-check <src> to <dst> failed with <reason> (kt/plugins/clusterdomainroute_plugin.go)
    const std::string pair = between(m, "cdr-check ", " failed with ");
    const std::size_t to = pair.find(" to ");
    if (to != std::string::npos) n.pair = pair.substr(0, to) + "-" + pair.substr(to + 4);
    n.routeReason = firstWord(between(m, " failed with ", ""));
    break;
  }
  case Reason::kResourceShortage:
    n.party = firstWord(between(m, "for domain ", ""));
    if (n.party.empty()) n.party = firstWord(between(m, "no node cache to ", ""));
    break;
  case Reason::kApprovalRejected: n.party = between(m, "Party: ", " approval reject"); break;
  case Reason::kReservationFailed: n.party = firstWord(between(m, "domain [", "]")); break;
  case Reason::kPartnerFailed: n.party = firstWord(between(m, "failed party[", "]")); break;
  default: break;
  }
  return n;
}

Classification classify(const std::vector<Evidence>& evidence) {
  Classification c;
  const Evidence* chosen = nullptr;
  std::vector<Reason> reasons;
  reasons.reserve(evidence.size());
  for (const auto& e : evidence) {
    Reason r = reasonOf(e);
    reasons.push_back(r);
    const bool earlier =
        chosen != nullptr && r == c.reason && e.at != 0 && (chosen->at == 0 || e.at < chosen->at);
    if (chosen == nullptr || r < c.reason || earlier) {
      chosen = &e;
      c.reason = r;
    }
  }
  // A partner's failure is what a party's own failure shows as in the others' tasks (Kuscia lists
  // the failed parties): it may be the reason, never the cause beside another.
  for (Reason r : reasons)
    if (r != c.reason && r != Reason::kUnknown && r != Reason::kPartnerFailed &&
        (!c.cause || r < *c.cause))
      c.cause = r;
  if (chosen == nullptr) return c;
  c.entry = chosen->entry;
  const Named named = namedIn(c.reason, *chosen);
  c.party = !named.party.empty()     ? named.party
            : !chosen->entry.empty() ? std::string(namespaceOf(chosen->entry))
                                     : chosen->party;
  c.pair = named.pair;
  c.routeReason = named.routeReason;
  c.since = chosen->at;
  std::string said = chosen->reason;
  if (!chosen->message.empty()) said += (said.empty() ? "" : ": ") + chosen->message;
  c.excerpt = excerpt(said);
  return c;
}

json toJson(const Classification& c) {
  json out = {{"reason", name(c.reason)}};
  if (c.cause) out["cause"] = name(*c.cause);
  if (!c.pair.empty()) out["pair"] = c.pair;
  if (!c.routeReason.empty()) out["routeReason"] = c.routeReason;
  if (c.routeDownSince || c.routeDownUntil) {
    json down = {{"observed", true}, {"precisionSeconds", 1}};
    if (c.routeDownSince)
      down["since"] = sdk::formatTime(*c.routeDownSince, sdk::TimePrecision::kAsGiven);
    if (c.routeDownUntil)
      down["until"] = sdk::formatTime(*c.routeDownUntil, sdk::TimePrecision::kAsGiven);
    out["routeDown"] = std::move(down);
  }
  if (c.routeLastHeartbeat)
    out["lastHeartbeatTime"] = sdk::formatTime(*c.routeLastHeartbeat, sdk::TimePrecision::kAsGiven);
  if (!c.party.empty()) out["party"] = c.party;
  if (!c.entry.empty()) out["entry"] = c.entry;
  if (c.since != 0) out["since"] = sdk::formatTime(c.since, sdk::TimePrecision::kAsGiven);
  if (!c.excerpt.empty()) out["excerpt"] = c.excerpt;
  return out;
}

} // namespace kuscia_host::model::failure
