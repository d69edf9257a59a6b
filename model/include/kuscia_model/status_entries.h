// A KusciaTask's status maps (podStatuses, serviceStatuses) as one party's plugin needs them: its
// own entries ("<party>/<name>") parsed, the other parties' entries only counted.
//
// Every status write of every party comes back to every instance as a task event carrying all
// the entries (about 2 KB for a two-party task). An instance writes and compares only its own,
// and of the others needs only whether each is ready. Parsing the whole map into a DOM on every
// event was the largest single cost of a task event (L1, in the benchmarks' history): here the
// other parties' entries are skipped by a scanner that only matches quotes and brackets, and only
// the instance's own entries become JSON values.
#pragma once

#include <kuscia_model/timeline_summary.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/status_patch.h>

namespace kuscia_host::model {

// Entries of a status map as their texts: each key's text between its quotes and the entry's
// text, views into the text they were found in.
using EntryTexts = std::vector<std::pair<std::string_view, std::string_view>>;

struct PartyEntries {
  nlohmann::json own = nlohmann::json::object(); // "<party>/<name>" -> entry
  std::size_t others = 0;                        // entries of other parties
  std::size_t othersReady = 0;                   // of those, the ones holding a readyTime
  // Of the own entries' text: noEntriesDigest() plus each entry's entryTextDigest(), in any
  // order. 0 from splitParsedEntries (not known).
  uint64_t ownDigest = 0;
  // The other parties' entries as the scanner passed them, views into the text split (valid
  // while it lives): what the summary reads them from (entryTimesOf) without walking the map
  // again. Empty from splitParsedEntries.
  EntryTexts otherTexts;
  // The own entries the same way, in a split asked for texts (`ownAsTexts`): `own` is then left
  // empty, nothing parsed. Most task events change nothing of one party's entries (another
  // party wrote, or the phase moved): a reader that holds them (OwnEntryTexts, own_entries.h)
  // compares the digest and keeps what it holds.
  EntryTexts ownTexts;
};

// The spans of the elements of a JSON array (the projected fields of an event, in declaration
// order); nullopt when the text is not an array this scanner can walk.
std::optional<std::vector<std::string_view>> arrayElements(std::string_view json);

// Whether an Endpoints' subsets text holds an address (endpointsHaveAddress() of kuscia_model.h,
// without a DOM); nullopt when the text is not one this scanner can walk.
std::optional<bool> subsetsHaveAddress(std::string_view subsetsJson);

// A member name as its text between the quotes has it, decoded (a name with no escape, as every
// Kubernetes name, is its text); nullopt when it does not decode.
std::optional<std::string> decodedKey(std::string_view rawKey);

// The string one JSON value's text holds (a span the scanner gave: its text between the quotes
// when it has no escape, else what the full parser reads); nullopt when it is not a string.
std::optional<std::string> stringValue(std::string_view valueJson);
// The same without a copy: a view of the text between the quotes when it has no escape (times,
// names: the common case), else of the decoded string put in `decoded`.
std::optional<std::string_view> stringView(std::string_view valueJson, std::string& decoded);

// A status map's text split for the party whose keys start with `ownPrefix` ("" : every entry is
// its own). null (or absent) is an empty map; nullopt when the text is not an object of objects,
// or an own entry does not parse.
std::optional<PartyEntries> splitEntries(std::string_view objectJson, std::string_view ownPrefix,
                                         bool ownAsTexts = false);

// The first `n` elements of a projected fields array, as strings ("" for an element that is not
// a string, and for those after text the scanner cannot walk); stops reading after them, so a
// task's timing maps further on cost nothing.
std::vector<std::string> leadingStrings(std::string_view fieldsJson, std::size_t n);

// A task's projected fields ending with its two status maps (podStatuses, serviceStatuses): the
// spans of the `leading` fields before them, and the maps split as splitEntries splits them, in
// one walk of the text. nullopt when the text is not such an array this scanner can walk.
struct TaskFields {
  std::vector<std::string_view> leading;
  PartyEntries pods, services;
};
std::optional<TaskFields> splitTaskFields(std::string_view fieldsJson, std::size_t leading,
                                          std::string_view ownPrefix, bool ownAsTexts = false);

// The digest of own entries is built from parts: the digest of no entries, and each entry's part
// (its key and its text). Equal texts digest alike in any order; a write merged into held texts
// as the API server merges it (mergedEntryText) digests like the server's text of the result.
uint64_t noEntriesDigest();
uint64_t entryTextDigest(std::string_view key, std::string_view entryText);

// An entry's text with a patch's entry merged into it (RFC 7386: members set, or removed when the
// patch clears them), its members ordered by name, written compact: what the API server writes
// of the merged object when `entryText` is what it wrote before (values kept as their text). ""
// is an entry not there yet. nullopt when the text is not an object this scanner reads as the
// parser does (a member name with an escape, a name given twice): the caller merges a DOM then.
std::optional<std::string> mergedEntryText(std::string_view entryText,
                                           const StatusPatch::Entry& patch);

// The other parties' entries of a status map's text (keys not starting with `ownPrefix`),
// parsed: what a party's own record lacks to draw the whole task. An empty object when the text
// is not an object of objects.
nlohmann::json otherEntries(std::string_view objectJson, std::string_view ownPrefix);
// The entries of a status map's text whose key `keep` accepts, parsed; the others are skipped
// unparsed (`keep` sees every key). null is an empty map; nullopt when the text is not an object
// of objects this scanner can walk, or a kept entry does not parse.
std::optional<nlohmann::json> entriesWhere(std::string_view objectJson,
                                           const std::function<bool(std::string_view key)>& keep);

// The same, each kept entry as its decoded key and its text (a view into `objectJson`), in the
// text's order, none parsed; nullopt when the text is not an object of objects this scanner can
// walk.
std::optional<std::vector<std::pair<std::string, std::string_view>>>
entryTextsWhere(std::string_view objectJson, const std::function<bool(std::string_view key)>& keep);

// What the timeline document reads of one status entry's text (model::timeline's entryParts): the
// instant of each time field, in EntryTimes::fields() order (none: absent, or a string that is
// not a time), and podPhase's text. nullopt when the parser's reading could differ from the
// scanner's: not an object, a member name with an escape, a time field that is not a string, a
// podPhase that is not a string with nothing to escape, or "reasons" (an object the document
// copies).
struct EntryFieldTexts {
  std::array<std::optional<int64_t>, model::timeline::EntryTimes::kTimeCount> times;
  std::string_view podPhase; // "" none
};
std::optional<EntryFieldTexts> entryFieldTexts(std::string_view entryJson);

// The other parties' entries a split passed (PartyEntries::otherTexts) as the timeline summary
// reads them (each entry's times and reasons, as EntryTimes::readTimes and readReasons read a
// parsed entry), no entry parsed into a DOM; `pods`: they are podStatuses' entries. nullopt when
// an entry is not one this scanner reads (the caller parses the text then).
std::optional<std::vector<model::timeline::EntryTimes>> entryTimesOf(const EntryTexts& entries,
                                                                     bool pods);

// The times of one status entry's text as EntryClock reads them off the parsed entry; nullopt
// when the parser's reading could differ from the scanner's (not an object, a member name with
// an escape, a time field given twice): the caller parses the text then.
std::optional<EntryClock> entryClockOfText(std::string_view entryJson);

// How many entries a status map's text holds, none of them parsed; nullopt when the text is not
// an object of objects.
std::optional<std::size_t> countEntries(std::string_view objectJson);

// The same split of a map already parsed (what a caller falls back to).
PartyEntries splitParsedEntries(const nlohmann::json& map, std::string_view ownPrefix);

} // namespace kuscia_host::model
