#include "write_contest.h"

#include "kuscia_time.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace kuscia_host::plugins {

using nlohmann::json;

namespace {

// The fields of an entry that only identify it (written with a new entry, never contested).
bool identifying(std::string_view field) {
  return field == "namespace" || field == "podName" || field == "podPhase" ||
         field == "serviceName";
}

// A resourceVersion as a number (Kubernetes' are etcd revisions); 0 when it is not one, and
// then no event is taken for older than a write.
uint64_t versionNumber(std::string_view rv) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
  return ec == std::errc() && end == rv.data() + rv.size() ? n : 0;
}

// metadata.resourceVersion of a stored object's JSON, without parsing the whole object.
uint64_t responseVersion(std::string_view body) {
  constexpr std::string_view kKey = "\"resourceVersion\"";
  auto at = body.find(kKey);
  if (at == std::string_view::npos) return 0;
  at = body.find('"', body.find(':', at + kKey.size()));
  if (at == std::string_view::npos) return 0;
  auto end = body.find('"', at + 1);
  return end == std::string_view::npos ? 0 : versionNumber(body.substr(at + 1, end - at - 1));
}

void prune(std::vector<int64_t>& times, int64_t now) {
  times.erase(times.begin(), std::find_if(times.begin(), times.end(), [now](int64_t t) {
                return now - t <= WriteContest::kWindowMillis;
              }));
}

const json* member(const json& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The status maps a contest knows, by the group index of its entries.
constexpr std::array<const char*, 2> kGroups = {"podStatuses", "serviceStatuses"};
constexpr auto kGroupCount = static_cast<uint8_t>(kGroups.size());

} // namespace

bool sameTime(int64_t have, int64_t want) {
  if (have == want) return true;
  int64_t truncated = want - (((want % kSecond) + kSecond) % kSecond);
  return have == truncated;
}

WriteContest::WriteContest(sdk::Host host, const std::string& metricPrefix, int yieldAfter)
    : host_(host), yieldAfter_(std::max(1, yieldAfter)),
      yieldedMetric_(host.counter(metricPrefix + "_yielded_fields_total",
                                  "Status fields of one entry this plugin stopped writing because "
                                  "another writer kept overwriting them, by field",
                                  {"field"})),
      overwrites_(host.counter(metricPrefix + "_overwritten_fields_total",
                               "Status fields this plugin wrote that another writer then replaced "
                               "with another value or removed, by kind",
                               {"kind"})) {}

int64_t WriteContest::nowMillis() const {
  return host_.monotonicNanos() / 1000000;
}

std::optional<uint8_t> WriteContest::nameIndex(std::string_view field, bool add) {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == field) return static_cast<uint8_t>(i);
  if (!add || names_.size() > UINT8_MAX) return std::nullopt;
  names_.emplace_back(field);
  return static_cast<uint8_t>(names_.size() - 1);
}

WriteContest::Entry* WriteContest::findEntry(Task& t, uint8_t group, std::string_view key,
                                             bool add) {
  auto at = std::lower_bound(t.entries.begin(), t.entries.end(), std::pair(group, key),
                             [](const Entry& e, const std::pair<uint8_t, std::string_view>& k) {
                               return e.group != k.first ? e.group < k.first : e.key < k.second;
                             });
  if (at != t.entries.end() && at->group == group && at->key == key) return &*at;
  if (!add) return nullptr;
  Entry e;
  e.key = std::string(key);
  e.group = group;
  return &*t.entries.insert(at, std::move(e));
}

WriteContest::Field* WriteContest::findField(Entry& e, uint8_t name, bool add) {
  auto at = std::find_if(e.fields.begin(), e.fields.end(),
                         [name](const Field& f) { return f.name >= name; });
  if (at != e.fields.end() && at->name == name) return &*at;
  if (!add) return nullptr;
  Field f;
  f.name = name;
  return &*e.fields.insert(at, std::move(f));
}

const WriteContest::Field* WriteContest::findField(const Task& t, std::string_view group,
                                                   std::string_view entry,
                                                   std::string_view field) const {
  for (const Entry& e : t.entries) {
    if (kGroups[e.group] != group || e.key != entry) continue;
    for (const Field& f : e.fields)
      if (names_[f.name] == field) return &f;
  }
  return nullptr;
}

void WriteContest::wrote(const std::string& task, const json& status,
                         std::string_view responseBody) {
  uint64_t version = responseVersion(responseBody);
  Task& t = tasks_[task];
  for (uint8_t group = 0; group < kGroupCount; ++group) {
    const json* entries = member(status, kGroups[group]);
    if (entries == nullptr || !entries->is_object()) continue;
    for (const auto& [key, fields] : entries->items()) {
      if (!fields.is_object()) continue;
      for (const auto& [field, value] : fields.items()) {
        if (identifying(field)) continue;
        auto instant = value.is_string() ? parseTime(value.get<std::string>()) : std::nullopt;
        if (!instant) { // cleared: nothing of ours to defend
          auto name = nameIndex(field, false);
          Entry* e = name ? findEntry(t, group, key, false) : nullptr;
          if (Field* f = e != nullptr ? findField(*e, *name, false) : nullptr) f->defending = false;
          continue;
        }
        auto name = nameIndex(field, true);
        if (!name) continue; // more names than a contest holds: not defended
        Field& f = *findField(*findEntry(t, group, key, true), *name, true);
        f.lastWritten = *instant;
        f.defending = true;
        f.writtenVersion = version;
      }
    }
  }
}

void WriteContest::observed(const std::string& task, std::string_view resourceVersion,
                            const json& podStatuses, const json& serviceStatuses) {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return;
  Task& t = it->second;
  uint64_t version = versionNumber(resourceVersion);
  int64_t now = nowMillis();
  for (Entry& e : t.entries) {
    const json* entry = nullptr;
    bool looked = false;
    for (Field& f : e.fields) {
      if (f.defending && !(f.writtenVersion != 0 && version != 0 &&
                           version <= f.writtenVersion)) { // not an event older than the write
        if (!looked) {
          entry = member(e.group == 0 ? podStatuses : serviceStatuses, e.key);
          looked = true;
        }
        const json* value = entry != nullptr ? member(*entry, names_[f.name]) : nullptr;
        if (value != nullptr && value->is_null()) value = nullptr;
        auto have = value != nullptr && value->is_string() ? parseTime(value->get<std::string>())
                                                           : std::nullopt;
        if (!have || !sameTime(*have, f.lastWritten)) overwritten(task, t, e, f, entry, value);
      }
      if (f.contest) {
        prune(f.contest->replaced, now);
        prune(f.contest->removed, now);
      }
    }
    // Nothing left to remember of a field neither defended nor contested.
    std::erase_if(e.fields, [](const Field& f) {
      return !f.defending && (!f.contest || (!f.contest->yielded && f.contest->replaced.empty() &&
                                             f.contest->removed.empty()));
    });
  }
  std::erase_if(t.entries, [](const Entry& e) { return e.fields.empty(); });
  if (t.entries.empty() && t.holdUntilMillis <= now) tasks_.erase(it);
}

void WriteContest::overwritten(const std::string& task, Task& t, const Entry& e, Field& f,
                               const json* entry, const json* value) {
  int64_t now = nowMillis();
  if (!f.contest) f.contest = std::make_unique<Contest>();
  Contest& c = *f.contest;
  prune(c.replaced, now);
  prune(c.removed, now);
  bool replaced = value != nullptr;
  (replaced ? c.replaced : c.removed).push_back(now);
  overwrites_.add(1, {replaced ? "replaced" : "removed"});
  if (static_cast<int>(c.replaced.size()) >= yieldAfter_ ||
      static_cast<int>(c.removed.size()) >= kRemovalsToYield) {
    yield(task, e, f, entry, replaced ? value->dump() : std::string("nothing (removed)"));
  } else if (c.removed.size() >= 2) {
    int64_t hold = std::min<int64_t>(
        kMaxHoldMillis, int64_t{1000} << std::min<std::size_t>(c.removed.size() - 2, 16));
    t.holdUntilMillis = std::max(t.holdUntilMillis, now + hold);
  }
  f.defending = false; // counted once; the next write records it again
}

void WriteContest::yield(const std::string& task, const Entry& e, Field& f, const json* entry,
                         const std::string& theirs) {
  Contest& c = *f.contest;
  c.yielded = true;
  // The incarnation yielded: this host's own createTime of the entry (what it wrote last), else
  // the status's.
  c.createNanos = kNone;
  auto createName = nameIndex("createTime", false);
  auto own = std::find_if(e.fields.begin(), e.fields.end(),
                          [&](const Field& o) { return createName && o.name == *createName; });
  const json* create = entry != nullptr ? member(*entry, "createTime") : nullptr;
  if (own != e.fields.end() && own->lastWritten != kNone)
    c.createNanos = own->lastWritten;
  else if (create != nullptr && create->is_string())
    c.createNanos = parseTime(create->get<std::string>()).value_or(kNone);
  const std::string& field = names_[f.name];
  yieldedMetric_.add(1, {field.c_str()});
  host_.warn("task " + task + " " + e.key + ": " + field +
             " yielded to another writer, which wrote " + theirs + " over this host's \"" +
             formatTime(f.lastWritten, TimePrecision::kAsGiven) + "\" " +
             std::to_string(std::max(c.replaced.size(), c.removed.size())) + " times within " +
             std::to_string(kWindowMillis / 1000) +
             " s; this host no longer writes it for this entry and keeps its own value in the "
             "timeline");
}

json WriteContest::filter(const std::string& task, json status) {
  auto it = tasks_.find(task);
  if (it == tasks_.end() || !status.is_object()) return status;
  Task& t = it->second;
  for (uint8_t group = 0; group < kGroupCount; ++group) {
    const char* groupName = kGroups[group];
    if (!status.contains(groupName) || !status[groupName].is_object()) continue;
    json& entries = status[groupName];
    for (auto e = entries.begin(); e != entries.end();) {
      json& patch = e.value();
      if (!patch.is_object()) {
        ++e;
        continue;
      }
      const json* createField = member(patch, "createTime");
      const std::optional<int64_t> create = createField != nullptr && createField->is_string()
                                                ? parseTime(createField->get<std::string>())
                                                : std::nullopt;
      Entry* held = findEntry(t, group, e.key(), false);
      bool anyTime = false;
      for (auto field = patch.begin(); field != patch.end();) {
        auto name = held != nullptr ? nameIndex(field.key(), false) : std::nullopt;
        Field* y = name ? findField(*held, *name, false) : nullptr;
        if (y != nullptr && y->contest && y->contest->yielded) {
          if (create && y->contest->createNanos != kNone && *create != y->contest->createNanos) {
            y->contest.reset(); // a new incarnation of the entry: no contest yet
            y->defending = false;
          } else {
            field = patch.erase(field);
            continue;
          }
        }
        anyTime = anyTime || !identifying(field.key());
        ++field;
      }
      if (anyTime)
        ++e;
      else
        e = entries.erase(e);
    }
    if (entries.empty()) status.erase(groupName);
  }
  return status.empty() ? json() : status;
}

int64_t WriteContest::holdMillis(const std::string& task) const {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return 0;
  return std::max<int64_t>(0, it->second.holdUntilMillis - nowMillis());
}

bool WriteContest::yielded(const std::string& task, std::string_view group, std::string_view entry,
                           std::string_view field) const {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return false;
  const Field* f = findField(it->second, group, entry, field);
  return f != nullptr && f->contest && f->contest->yielded;
}

void WriteContest::forget(const std::string& task) {
  tasks_.erase(task);
}

} // namespace kuscia_host::plugins
