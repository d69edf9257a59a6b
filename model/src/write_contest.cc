#include <kuscia_model/write_contest.h>

#include <kuscia_model/kuscia_time.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace kuscia_host::model {

using nlohmann::json;

namespace {

void prune(std::vector<int64_t>& times, int64_t now) {
  times.erase(times.begin(), std::find_if(times.begin(), times.end(), [now](int64_t t) {
                return now - t <= WriteContest::kWindowMillis;
              }));
}

const json* member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The status maps a contest knows, by the group index of its entries.
constexpr std::array<const char*, 2> kGroups = {"podStatuses", "serviceStatuses"};
static_assert(StatusPatch::kPods == 0 && StatusPatch::kServices == 1, "the same group indices");

} // namespace

uint64_t versionNumber(std::string_view rv) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
  return ec == std::errc() && end == rv.data() + rv.size() ? n : 0;
}

uint64_t responseVersion(std::string_view body) {
  constexpr std::string_view kKey = "\"resourceVersion\"";
  auto at = body.find(kKey);
  if (at == std::string_view::npos) return 0;
  at = body.find('"', body.find(':', at + kKey.size()));
  if (at == std::string_view::npos) return 0;
  auto end = body.find('"', at + 1);
  return end == std::string_view::npos ? 0 : versionNumber(body.substr(at + 1, end - at - 1));
}

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
                               {"kind"})) {
  // Both kinds from the start: a dashboard shows 0 where nothing was overwritten, not nothing.
  for (const char* kind : {"replaced", "removed"})
    overwrites_.add(0, {kind});
}

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

std::string_view WriteContest::keyOf(const Task& t, const Field& f) {
  return {t.keys.data() + f.keyAt}; // NUL-terminated
}

WriteContest::Field* WriteContest::findField(Task& t, uint8_t group, std::string_view key,
                                             uint8_t name, bool add) {
  // A task has a few entries of a few fields: a walk in order.
  auto before = [&](const Field& f) {
    if (f.group != group) return f.group < group;
    int c = keyOf(t, f).compare(key);
    return c != 0 ? c < 0 : f.name < name;
  };
  auto at = std::find_if_not(t.fields.begin(), t.fields.end(), before);
  if (at != t.fields.end() && at->group == group && at->name == name && keyOf(t, *at) == key)
    return &*at;
  if (!add) return nullptr;
  // The entry's key as written for another of its fields, else written now.
  std::optional<uint16_t> keyAt;
  for (auto* n :
       {at == t.fields.begin() ? nullptr : &*(at - 1), at == t.fields.end() ? nullptr : &*at})
    if (n != nullptr && n->group == group && keyOf(t, *n) == key) keyAt = n->keyAt;
  if (!keyAt) {
    if (t.keys.size() + key.size() + 1 > kMaxKeys) return nullptr;
    keyAt = static_cast<uint16_t>(t.keys.size());
    t.keys.append(key).push_back('\0');
  }
  Field f;
  f.keyAt = *keyAt;
  f.group = group;
  f.name = name;
  return &*t.fields.insert(at, f);
}

const WriteContest::Field* WriteContest::findField(const Task& t, std::string_view group,
                                                   std::string_view entry,
                                                   std::string_view field) const {
  for (const Field& f : t.fields)
    if (kGroups[f.group] == group && names_[f.name] == field && keyOf(t, f) == entry) return &f;
  return nullptr;
}

WriteContest::ContestKey WriteContest::contestKey(const Task& t, const Field& f) {
  return {f.group, std::string(keyOf(t, f)), f.name};
}

const WriteContest::Contest* WriteContest::findContest(const Task& t, const Field& f) {
  if (!f.contested || !t.contests) return nullptr;
  auto c = t.contests->find(contestKey(t, f));
  return c == t.contests->end() ? nullptr : &c->second;
}

WriteContest::Contest* WriteContest::contestOf(Task& t, Field& f, bool add) {
  if (!add) return const_cast<Contest*>(findContest(t, f)); // NOLINT: t is not const here
  if (!t.contests) t.contests = std::make_unique<std::map<ContestKey, Contest>>();
  f.contested = true;
  return &(*t.contests)[contestKey(t, f)];
}

void WriteContest::compactKeys(Task& t) {
  std::string keys;
  std::vector<std::pair<uint16_t, uint16_t>> moved; // old offset -> new
  for (Field& f : t.fields) {
    auto m = std::find_if(moved.begin(), moved.end(),
                          [&f](const auto& o) { return o.first == f.keyAt; });
    if (m == moved.end()) {
      moved.emplace_back(f.keyAt, static_cast<uint16_t>(keys.size()));
      keys.append(keyOf(t, f)).push_back('\0');
      m = moved.end() - 1;
    }
    f.keyAt = m->second;
  }
  t.keys = std::move(keys);
  t.fields.shrink_to_fit();
}

void WriteContest::wrote(const std::string& task, const StatusPatch& status, uint64_t version) {
  Task& t = tasks_[task];
  for (const auto& e : status.entries()) {
    const auto group = static_cast<uint8_t>(e.group);
    for (const auto& [field, nanos] : e.fields) {
      if (nanos == StatusPatch::kClear) { // cleared: nothing of ours to defend
        auto name = nameIndex(fieldName(field), false);
        if (Field* f = name ? findField(t, group, e.key, *name, false) : nullptr)
          f->defending = false;
        continue;
      }
      auto name = nameIndex(fieldName(field), true);
      if (!name) continue; // more names than a contest holds: not defended
      Field* f = findField(t, group, e.key, *name, true);
      if (f == nullptr) continue; // more keys than a task's contest holds: not defended
      f->lastWritten = nanos;
      f->defending = true;
      f->writtenVersion = version;
    }
  }
  // Written once or a few times per task: exactly what it holds, not a doubling's room.
  t.fields.shrink_to_fit();
  t.keys.shrink_to_fit();
}

void WriteContest::observed(const std::string& task, std::string_view resourceVersion,
                            const json& podStatuses, const json& serviceStatuses) {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return;
  Task& t = it->second;
  uint64_t version = versionNumber(resourceVersion);
  int64_t now = nowMillis();
  const json* entry = nullptr;
  const Field* entryOf = nullptr; // the field `entry` was looked up for (same group and key)
  for (std::size_t i = 0; i < t.fields.size(); ++i) {
    Field& f = t.fields[i];
    if (f.defending && !(f.writtenVersion != 0 && version != 0 &&
                         version <= f.writtenVersion)) { // not an event older than the write
      if (entryOf == nullptr || entryOf->group != f.group || entryOf->keyAt != f.keyAt) {
        entry = member(f.group == 0 ? podStatuses : serviceStatuses, keyOf(t, f));
        entryOf = &f;
      }
      const json* value = entry != nullptr ? member(*entry, names_[f.name]) : nullptr;
      if (value != nullptr && value->is_null()) value = nullptr;
      auto have = value != nullptr && value->is_string()
                      ? parseTime(value->get_ref<const std::string&>())
                      : std::nullopt;
      if (!have || !sameTime(*have, *f.lastWritten)) overwritten(task, t, f, value);
    }
    if (Contest* c = contestOf(t, f, false)) {
      prune(c->replaced, now);
      prune(c->removed, now);
    }
  }
  // Nothing left to remember of a field neither defended nor contested.
  const std::size_t before = t.fields.size();
  std::erase_if(t.fields, [&t](Field& f) {
    if (f.defending) return false;
    Contest* c = contestOf(t, f, false);
    if (c != nullptr && (c->yielded || !c->replaced.empty() || !c->removed.empty())) return false;
    if (c != nullptr) t.contests->erase(contestKey(t, f));
    return true;
  });
  if (t.fields.size() != before) compactKeys(t);
  if (t.contests && t.contests->empty()) t.contests.reset();
  if (t.fields.empty() && t.holdUntilMillis <= now) tasks_.erase(it);
}

void WriteContest::overwritten(const std::string& task, Task& t, Field& f, const json* value) {
  int64_t now = nowMillis();
  Contest& c = *contestOf(t, f, true);
  if (c.yielded) {
    // A write already on its way when the field was yielded, overwritten in turn: yielded once.
    f.defending = false;
    return;
  }
  prune(c.replaced, now);
  prune(c.removed, now);
  bool replaced = value != nullptr;
  (replaced ? c.replaced : c.removed).push_back(now);
  overwrites_.add(1, {replaced ? "replaced" : "removed"});
  if (static_cast<int>(c.replaced.size()) >= yieldAfter_ ||
      static_cast<int>(c.removed.size()) >= kRemovalsToYield) {
    yield(task, t, f, c, replaced ? value->dump() : std::string("nothing (removed)"));
  } else if (c.removed.size() >= 2) {
    int64_t hold = std::min<int64_t>(
        kMaxHoldMillis, int64_t{1000} << std::min<std::size_t>(c.removed.size() - 2, 16));
    t.holdUntilMillis = std::max(t.holdUntilMillis, now + hold);
  }
  f.defending = false; // counted once; the next write records it again
}

void WriteContest::yield(const std::string& task, Task& t, Field& f, Contest& c,
                         const std::string& theirs) {
  c.yielded = true;
  // The incarnation yielded: this host's own createTime of the entry (what it wrote last), else
  // the one its next patch of the entry carries (filter()). Not the status's: the other writer
  // may have replaced that too (a host that restarted wrote no createTime of its own yet).
  c.createNanos.reset();
  auto createName = nameIndex("createTime", false);
  const Field* own = createName ? findField(t, f.group, keyOf(t, f), *createName, false) : nullptr;
  if (own != nullptr && own->lastWritten) c.createNanos = own->lastWritten;
  const std::string& field = names_[f.name];
  yieldedMetric_.add(1, {field.c_str()});
  host_.warn("task " + task + " " + std::string(keyOf(t, f)) + ": " + field +
             " yielded to another writer, which wrote " + theirs + " over this host's \"" +
             f.lastWritten.text() + "\" " +
             std::to_string(std::max(c.replaced.size(), c.removed.size())) + " times within " +
             std::to_string(kWindowMillis / 1000) +
             " s; this host no longer writes it for this entry and keeps its own value in the "
             "timeline");
}

void WriteContest::filter(const std::string& task, StatusPatch& status) {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return;
  Task& t = it->second;
  // Only a field another writer kept overwriting is taken out: none while nothing is contested.
  if (t.contests) {
    for (auto& e : status.entries()) {
      const auto group = static_cast<uint8_t>(e.group);
      const std::optional<int64_t> create = e.time(TimeField::kCreate);
      std::erase_if(e.fields, [&](const StatusPatch::Field& field) {
        auto name = nameIndex(fieldName(field.name), false);
        Field* y = name ? findField(t, group, e.key, *name, false) : nullptr;
        Contest* c = y != nullptr ? contestOf(t, *y, false) : nullptr;
        if (c == nullptr || !c->yielded) return false;
        if (create && !c->createNanos) c->createNanos = *create; // the incarnation yielded
        if (create && c->createNanos && *create != *c->createNanos) {
          // A new incarnation of the entry: no contest yet.
          t.contests->erase(contestKey(t, *y));
          y->contested = false;
          y->defending = false;
          return false;
        }
        return true;
      });
    }
  }
  std::erase_if(status.entries(), [](const StatusPatch::Entry& e) { return e.fields.empty(); });
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
  const Task& t = it->second;
  const Field* f = findField(t, group, entry, field);
  const Contest* c = f != nullptr ? findContest(t, *f) : nullptr;
  return c != nullptr && c->yielded;
}

void WriteContest::forget(const std::string& task) {
  tasks_.erase(task);
}

} // namespace kuscia_host::model
