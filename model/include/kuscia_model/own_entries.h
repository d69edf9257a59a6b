// One party's own entries of a KusciaTask status map as the API server wrote them: each key, the
// entry's text, that text's part of the digest (status_entries.h) and its times read once.
//
// What a status-writing plugin holds of a task while it starts (task-timeline). Its own entries
// change only when it writes them (or another writer does, which the next event shows); each
// write is merged into the texts as the server merges it (mergedEntryText), so the event the
// write causes digests like what is held and is taken without reading it again. Held as DOMs, a
// write cost a merge into the DOM and a dump of every own entry for the digest, about 28,000
// instructions (the benchmarks' history, "task-timeline's own entries as text"); as texts it is the
// merge of the entries written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/status_entries.h>
#include <kuscia_model/status_patch.h>

namespace kuscia_host::model {

class OwnEntryTexts {
public:
  struct Entry {
    std::string key;  // "<namespace>/<name>", decoded
    std::string text; // the entry object's JSON text
    uint64_t digest = 0;
    EntryClock clock{nullptr};
  };

  // A split's own entries (PartyEntries::ownTexts); nullopt when a key does not decode. A key
  // given twice keeps its later entry, as the parser keeps it.
  static std::optional<OwnEntryTexts> fromTexts(const EntryTexts& texts);
  // Parsed entries ("<key>" -> entry), each held as its compact text (the full parser's way).
  static OwnEntryTexts fromJson(const nlohmann::json& own);

  // Of the texts held: noEntriesDigest() plus each entry's part, as a split's ownDigest of the
  // same entries.
  uint64_t digest() const { return digest_; }
  const std::vector<Entry>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  const Entry* find(std::string_view key) const;
  // The times of the entry `key`; of an entry that is not there (present() false) when none.
  const EntryClock& clockOf(std::string_view key) const;
  // Sets the entry `key` to `text`, replacing one of the same key.
  void put(std::string key, std::string text);
  // Merges the patch's entries of `group` into the texts, as the API server merges it (an entry
  // the texts lack is added; a cleared field is removed).
  void apply(const StatusPatch& patch, StatusPatch::Group group);
  // The entries as (key, text) views, for entryTimesOf (valid while this is not changed).
  EntryTexts views() const;
  // The entries parsed: for the readers of a DOM (the timeline document, the write contest).
  nlohmann::json toJson() const;

private:
  // put() with the entry's times known (what a merge changed of the times held).
  void put(std::string key, std::string text, const EntryClock& clock);

  std::vector<Entry> entries_; // ordered by key
  uint64_t digest_ = noEntriesDigest();
};

} // namespace kuscia_host::model
