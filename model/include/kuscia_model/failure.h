// Why a task failed, or why it is stuck: one reason from a fixed vocabulary, chosen from the
// evidence its pods and its own status give, by a documented precedence (docs/design/failure.md).
// The most actionable cause comes first and the underlying one beside it, as Kueue's
// inadmissible-workload reasons do: a task whose lifecycle ran out while bob's image could not be
// pulled is ImagePull, with Expired as its cause.
//
// Evidence is what Kubernetes, Kuscia's agent and Kuscia's controller write, in their own words:
// a container's waiting or terminated reason and message (the terminationLog Kuscia copies into
// the task's podStatuses), the PodScheduled condition, the pods' Events, the task's status
// message. The party is the evidence's, never Kuscia's partyTaskStatus (its failed handler marks
// every party Failed). Messages are user data: the excerpt is bounded (512 bytes) and holds no
// control character but newline and tab. Nothing matched is Unknown: never a guess.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::model::failure {

// In precedence order: the first that some evidence shows is the task's reason. The control
// plane's (a route's or the resources' pre-check, the approval, the reservation across parties,
// a partner's failure, the reservation's lifecycle) stand where their cause is most actionable.
enum class Reason {
  kMisconfigured,     // InvalidImageName, CreateContainerConfigError, a missing AppImage
  kRouteNotReady,     // the route pre-check: cdr-check <src> to <dst> failed with <route reason>
  kResourceShortage,  // the resource pre-check: resource-check no node ... for domain <d>
  kApprovalRejected,  // a partner rejected the job: Party: <d> approval reject.
  kImagePull,         // ErrImagePull, ImagePullBackOff, an unpack or pull timeout
  kUnschedulable,     // the scheduler found no place (its resource message)
  kReservationFailed, // the reservation across parties failed: domain [<d>] can not reserve ...
  kOOMKilled,         // a container killed for memory
  kPeerNetwork,       // a container ended with the gateway's connection errors in its log
  kCrashed,           // a container ended with an error (its exit code), CrashLoopBackOff
  kNotReady,          // readiness failing
  kPartnerFailed,     // a partner's party failed: failed party[<d>]
  kExpired,           // the TaskResourceGroup's lifecycle (lifecycleSeconds) ran out
  kUnknown,           // nothing matched
};
inline constexpr std::size_t kReasonCount = 14;

// "Misconfigured", "ImagePull", ...: the names the documents, metrics and filters use.
const char* name(Reason r);
std::optional<Reason> reasonNamed(std::string_view name);

// The excerpt of evidence kept and shown: at most this many bytes.
inline constexpr std::size_t kExcerptBytes = 512;

// `text` fit to keep and show in at most `maxBytes` bytes: no control character but newline and
// tab, and, when it is longer, its beginning and its end with " ... " between them (a log's last
// lines say why it ended; its first line says which container). Cut at UTF-8 boundaries.
std::string excerpt(std::string_view text, std::size_t maxBytes = kExcerptBytes);

// One piece of evidence: what an object said, where and when.
struct Evidence {
  std::string entry;   // "<ns>/<pod>"; "" for the task's own status
  std::string reason;  // the writer's reason: "ErrImagePull", "OOMKilled", "Unschedulable", ...
  std::string message; // its message, or the terminationLog
  int64_t at = 0;      // when it was seen (Unix nanoseconds; 0: unknown)
  std::string party;   // whose it is when the entry does not say (the task's own status)
};

// The reason a piece of evidence shows; kUnknown when none.
Reason reasonOf(const Evidence& e);

struct Classification {
  Reason reason = Reason::kUnknown;
  std::optional<Reason> cause; // the underlying reason, when another piece of evidence shows one
  std::string party, entry;    // the evidence's ("" when the task's own status said it)
  int64_t since = 0;           // when the evidence was seen (0: unknown)
  std::string excerpt;         // the evidence, bounded
  // RouteNotReady: the pair as the message names it ("alice-bob": upstream picks the order at
  // random) and the route's Ready reason ("HeartBeatTimeout"); when the route's outage that held
  // began and ended (observed: route_outage.h), and its last heartbeat (the route's own).
  std::string pair, routeReason;
  std::optional<int64_t> routeDownSince, routeDownUntil, routeLastHeartbeat;
};

// What the evidence's texts name beside its reason: the route's pair and Ready reason
// (RouteNotReady), the failed or rejecting party (PartnerFailed, ApprovalRejected, a shortage's
// domain). Fields it does not name stay empty.
struct Named {
  std::string party, pair, routeReason;
};
Named namedIn(Reason r, const Evidence& e);

// The task's reason: the first of the precedence that a piece of evidence shows (the earliest
// such evidence); the cause is the next reason of the precedence shown by other evidence.
Classification classify(const std::vector<Evidence>& evidence);

// {"reason", "party", "entry", "since", "excerpt"} (and "cause", "pair", "routeReason",
// "routeDown": {"since", "until", "observed": true, "precisionSeconds"}, "lastHeartbeatTime" when
// there are); absent fields are left out.
nlohmann::json toJson(const Classification& c);

} // namespace kuscia_host::model::failure
