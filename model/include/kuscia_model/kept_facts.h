// Facts that outlive the pods. What a pod and its Events told of its startup beyond the
// KusciaTask's status (the first ready, the containers' start, the image pull, why each phase
// waited) lives in memory while the pod is there; Kuscia deletes a finished task's pods, Events
// expire after an hour, and a host restarts. So task-timeline keeps them on the KusciaTask
// itself, in kuscia-host's own annotation, once the task started (or ended): one merge patch of
// the task's metadata, which neither Kuscia's status writes nor the CRD's pruning touch. Every
// reader (the timeline API and page, `kuscia-host timeline`, task-history, otel-export) then
// falls back to them for a pod it no longer sees, and gives the same answer
// (docs/design/timing.md, "Where each fact lives").
//
// The annotation's value is JSON: {"v": 1, "entries": {"<ns>/<pod>": {facts}}}, where facts are
// the status-like fields of a timeline document's entry: createTime (the incarnation they are
// of), firstReadyTime, containersStartTime, imagePullStartTime, imagePullEndTime and reasons
// ({"<phase>": {"reason", "message"}}). Messages are user data: bounded, without control
// characters. Beside them, "partners": the reservations of the parties whose pods the cluster
// does not hold (a p2p initiator's stub TaskResources, deleted with the group: a document's
// "partnerReservations", timeline_summary.h).
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kuscia_host::model {

inline constexpr const char* kKeptFactsAnnotation = "kuscia-host/facts";
// Its JSON pointer, for a subscription's fields.
inline constexpr const char* kKeptFactsPointer = "/metadata/annotations/kuscia-host~1facts";
// A reason's message is cut to this many bytes (at a UTF-8 boundary).
inline constexpr std::size_t kKeptMessageBytes = 256;
// Past this size the messages are left out; past it even then, nothing is kept. A task of 20
// parties and 60 pods fits with every message.
inline constexpr std::size_t kKeptFactsBytes = std::size_t{128} * 1024;

// `text` cut to at most `maxBytes` bytes at a UTF-8 boundary ("..." marks a cut), control
// characters other than newline and tab dropped: a message fit to keep or show.
std::string boundedText(std::string_view text, std::size_t maxBytes);

// The entries of an annotation's value ({"<ns>/<pod>": {facts}}); an empty object when there is
// none or it is not one this version reads.
nlohmann::json keptEntries(std::string_view annotation);

// The facts of one document entry to keep (from its status-like object: the fields above, others
// ignored), messages bounded; `createTime` the incarnation's.
nlohmann::json keptFactsOf(const nlohmann::json& facts, std::string_view createTime);

// The partners' reservations of an annotation's value; an empty object when it has none.
nlohmann::json keptPartners(std::string_view annotation);
// A document's "partnerReservations": those kept in `annotation` for the parties the document
// holds no entries of (`holds` says which it does), under the `live` ones (seen now: the stubs
// are there).
nlohmann::json partnerReservations(std::string_view annotation, const nlohmann::json& live,
                                   const std::function<bool(std::string_view party)>& holds);

// The annotation's value for these entries (and partners' reservations, when any); nullopt when
// even without messages it is larger than kKeptFactsBytes.
std::optional<std::string> keptFactsText(const nlohmann::json& entries,
                                         const nlohmann::json& partners = nlohmann::json::object());

// The merge patch that sets the annotation of a KusciaTask to `text`.
std::string keptFactsPatch(const std::string& text);

// The kept facts of the entry `key` whose status says `status` (its createTime): nullptr when
// none are kept, or they are of another incarnation of the pod.
const nlohmann::json* keptFor(const nlohmann::json& entries, const std::string& key,
                              const nlohmann::json& status);

// Adds to a status-like entry the kept facts (`kept`, from keptFor) it does not hold.
void addKeptFacts(nlohmann::json& entry, const nlohmann::json& kept);

// Adds to each pod entry of a KusciaTask object's status the kept facts of its incarnation that
// the entry does not hold (a pod's own facts, when it is there, come over them afterwards).
void applyKeptFacts(nlohmann::json& task);

} // namespace kuscia_host::model
