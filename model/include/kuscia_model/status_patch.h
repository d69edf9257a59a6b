// The "status" of a KusciaTask merge patch as the bundled plugins write it: for each entry of
// podStatuses or serviceStatuses, the time fields it sets to an instant or clears (null), and
// the fields that identify an entry the status lacks (what Kuscia's CRD requires of one).
//
// Facts, not a JSON document. A write is built by the plugin's diff, filtered by the write
// contest, sent as text, remembered by the contest and applied to the plugin's view of the task;
// as a DOM each step allocated a map node and a string per field and parsed back the times it
// had just formatted (a quarter of a write's cost: docs/development/benchmarks.md, "The write path
// as facts"). Its text is what nlohmann's dump() writes of the same document, byte for byte.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::model {

// The time fields of a status entry the plugins write.
enum class TimeField : uint8_t { kCreate, kSchedule, kStart, kReady };
// "createTime", "scheduleTime", "startTime", "readyTime".
const char* fieldName(TimeField field);

class StatusPatch {
public:
  // A member an entry writes: its name, and its value's JSON text at [at, at + size) of a buffer
  // (Entry::memberTexts), or that it is cleared.
  struct MemberText {
    const char* name;
    std::size_t at = 0, size = 0;
    bool clears = false;
  };
  enum Group : uint8_t { kPods, kServices };
  // "podStatuses", "serviceStatuses".
  static const char* groupName(Group group);
  // A field's instant that clears it (written as null: an earlier incarnation's time).
  static constexpr int64_t kClear = INT64_MIN;

  struct Field {
    TimeField name;
    int64_t nanos; // kClear: cleared
  };
  struct Entry {
    Group group = kPods;
    std::string key; // "<namespace>/<name>"
    // A new entry: written with namespace and podName and podPhase (pods; "Pending" when the
    // phase is not known), or namespace and serviceName (services).
    bool identify = false;
    std::string podPhase;
    std::vector<Field> fields; // one per name

    // Sets (or with kClear clears) a field, replacing what the entry held for it.
    void set(TimeField name, int64_t nanos);
    // The field's instant when the entry sets it (not when it clears it).
    std::optional<int64_t> time(TimeField name) const;
    // What it writes, member by member in the order of their names: each value's JSON text
    // (appended to `values`), or that the member is cleared (null in the patch: removed from the
    // entry). One buffer for every value: a write merges a few entries of a few members each.
    void memberTexts(std::vector<MemberText>& out, std::string& values) const;
  };

  // Adds an entry; entries are kept ordered by group, then key, and `entry` replaces one of the
  // same group and key.
  void add(Entry entry);
  bool empty() const { return entries_.empty(); }
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>& entries() { return entries_; }
  // Whether it sets or clears anything in `group`.
  bool touches(Group group) const;

  // Appends the "status" object's compact text: what dump() writes of toJson().
  void appendJson(std::string& out) const;
  // The same as a document (tests; readers that need one).
  nlohmann::json toJson() const;
  // Applies the patch's entries of `group` to that map of a status (`entries`, an object of
  // entries), as an RFC 7386 merge patch does.
  void applyTo(Group group, nlohmann::json& entries) const;

private:
  std::vector<Entry> entries_;
};

} // namespace kuscia_host::model
