// How task-history merges what it is given (pure functions, shared by every store):
//  - a recording over the one stored for the same (task, recorder): entry by entry, times and
//    reasons of both, the new ones winning; an entry whose createTime differs is a new
//    incarnation of the pod or service and replaces the old one. So a host restarted after a
//    task's pods are gone (its Events and first Ready forgotten) keeps what it recorded before.
//  - the recordings of several recorders into the task's document: each recorder is the authority
//    on its own party's entries (the entry's namespace is its domain); another party's entry, as
//    one recorder read it from the task's status, comes from the latest recording that has it.
//    The task's phase and createTime come from the latest recording.
#pragma once

#include <kuscia_model/timeline_summary.h>

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <kuscia_model/timeline_text.h>

namespace kuscia_host::plugins::history {

nlohmann::json mergeRecording(const nlohmann::json& stored, const nlohmann::json& incoming);

struct StoredRecording {
  std::string recorder;
  int64_t atNanos = 0;
  nlohmann::json document;
};
nlohmann::json combine(std::vector<StoredRecording> recordings);

// A task's recordings combined where they are, nothing copied or moved: what combine() would
// make of the same recordings, in the same order. A recording is its document, or its text with
// the times of its entries (TimelineText: a new recording the store has not parsed). The
// recordings must outlive the view.
struct RecordingRef {
  std::string_view recorder;
  int64_t atNanos = 0;
  const nlohmann::json* document = nullptr; // when `text` is null
  const model::TimelineText* text = nullptr;
};
struct CombinedView {
  std::size_t latestIndex = 0;   // the latest recording's place among the recordings
  std::string phase, createTime; // its document's, when strings
  model::timeline::TaskEnd end;  // what its document says of the task's end
  // The combined entries in key order, each the entry combine() takes (its document's entry, or
  // its times when the recording is text), with the place of the recording it is taken from.
  struct Entry {
    std::string_view key;
    const nlohmann::json* entry = nullptr;
    const model::timeline::EntryTimes* times = nullptr; // instead of `entry`
    std::size_t from = 0;
  };
  std::vector<Entry> entries;
  // The partners' reservations (a p2p initiator's stubs, "partnerReservations") of the parties
  // no combined entry is of, each from the latest recording that has it, and that recording's
  // place (partnerFrom[i] for partners[i]).
  std::vector<model::timeline::EntryTimes> partners;
  std::vector<std::size_t> partnerFrom;
};
CombinedView combinedView(const std::vector<RecordingRef>& recordings);

// The row a task's combined document makes (its summary dated `nowNanos`).
// The implicit noexcept move of nlohmann::json calls its invariant check, which clang-tidy cannot
// prove does not throw; it does not.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct TaskRow {
  // Seconds of a critical path per phase, in the order of model::timeline::kPhaseNames.
  using PathSeconds = std::array<double, std::size(model::timeline::kPhaseNames)>;
  struct Party {
    std::string name;
    std::optional<double> startupSeconds; // its last entry ready, when all of them are
    PathSeconds path{};                   // its phases on the task's critical path
  };
  std::string phase;
  int64_t createNanos = 0; // 0 when the document has no creation time
  bool complete = false;
  std::optional<double> startupSeconds;
  std::string blameParty, blamePhase;
  // Why it failed (summary.failure) or is stuck (summary.stuck): the reason's name and the party
  // of its evidence; "" when neither.
  std::string reason, reasonParty;
  std::vector<Party> parties; // by name
  PathSeconds path{};         // the whole critical path (complete tasks)
  nlohmann::json summary;     // as the documents carry it (model::timeline::toJson)
};
TaskRow taskRowOf(const nlohmann::json& document, int64_t nowNanos,
                  int64_t stuckAfterNanos = model::timeline::kStuckAfterNanos);
// The same of recordings combined in place: no combined document is built.
TaskRow taskRowOf(const CombinedView& combined, int64_t nowNanos,
                  int64_t stuckAfterNanos = model::timeline::kStuckAfterNanos);

} // namespace kuscia_host::plugins::history
