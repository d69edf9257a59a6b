#include "write_contest.h"

#include "kuscia_time.h"

#include <algorithm>
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

bool sameInstant(const std::string& a, const std::string& b) {
  auto x = parseTime(a);
  auto y = parseTime(b);
  return x && y ? *x == *y : a == b;
}

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

void WriteContest::wrote(const std::string& task, const json& status,
                         std::string_view responseBody) {
  uint64_t version = responseVersion(responseBody);
  Task& t = tasks_[task];
  for (const char* group : {"podStatuses", "serviceStatuses"}) {
    const json* entries = member(status, group);
    if (entries == nullptr || !entries->is_object()) continue;
    for (const auto& [entry, fields] : entries->items()) {
      if (!fields.is_object()) continue;
      for (const auto& [field, value] : fields.items()) {
        if (identifying(field)) continue;
        auto instant = value.is_string() ? parseTime(value.get<std::string>()) : std::nullopt;
        FieldKey key{group, entry, field};
        if (!instant) { // cleared: nothing of ours to defend
          if (auto it = t.fields.find(key); it != t.fields.end()) it->second.written.reset();
          continue;
        }
        Field& f = t.fields[key];
        f.written = instant;
        f.writtenText = value.get<std::string>();
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
  for (auto f = t.fields.begin(); f != t.fields.end();) {
    Field& field = f->second;
    if (field.written && !(field.writtenVersion != 0 && version != 0 &&
                           version <= field.writtenVersion)) { // not an event older than the write
      const FieldKey& key = f->first;
      const json* entry =
          member(key.group == "podStatuses" ? podStatuses : serviceStatuses, key.entry);
      const json* value = entry != nullptr ? member(*entry, key.field) : nullptr;
      if (value != nullptr && value->is_null()) value = nullptr;
      auto have = value != nullptr && value->is_string() ? parseTime(value->get<std::string>())
                                                         : std::nullopt;
      if (!have || !sameTime(*have, *field.written)) overwritten(task, t, key, field, entry, value);
    }
    prune(field.replaced, now);
    prune(field.removed, now);
    if (!field.written && !field.yielded && field.replaced.empty() && field.removed.empty())
      f = t.fields.erase(f); // nothing left to remember of it
    else
      ++f;
  }
  if (t.fields.empty() && t.holdUntilMillis <= now) tasks_.erase(it);
}

void WriteContest::overwritten(const std::string& task, Task& t, const FieldKey& key, Field& f,
                               const json* entry, const json* value) {
  int64_t now = nowMillis();
  prune(f.replaced, now);
  prune(f.removed, now);
  bool replaced = value != nullptr;
  (replaced ? f.replaced : f.removed).push_back(now);
  overwrites_.add(1, {replaced ? "replaced" : "removed"});
  if (static_cast<int>(f.replaced.size()) >= yieldAfter_ ||
      static_cast<int>(f.removed.size()) >= kRemovalsToYield) {
    yield(task, t, key, f, entry, replaced ? value->dump() : std::string("nothing (removed)"));
  } else if (f.removed.size() >= 2) {
    int64_t hold = std::min<int64_t>(
        kMaxHoldMillis, int64_t{1000} << std::min<std::size_t>(f.removed.size() - 2, 16));
    t.holdUntilMillis = std::max(t.holdUntilMillis, now + hold);
  }
  f.written.reset(); // counted once; the next write records it again
}

void WriteContest::yield(const std::string& task, Task& t, const FieldKey& key, Field& f,
                         const json* entry, const std::string& theirs) {
  f.yielded = true;
  // The incarnation yielded: this host's own createTime of the entry (what it wrote last), else
  // the status's.
  auto own = t.fields.find(FieldKey{key.group, key.entry, "createTime"});
  const json* create = entry != nullptr ? member(*entry, "createTime") : nullptr;
  if (own != t.fields.end() && !own->second.writtenText.empty())
    f.createTime = own->second.writtenText;
  else
    f.createTime = create != nullptr && create->is_string() ? create->get<std::string>() : "";
  yieldedMetric_.add(1, {key.field.c_str()});
  host_.warn("task " + task + " " + key.entry + ": " + key.field +
             " yielded to another writer, which wrote " + theirs + " over this host's \"" +
             f.writtenText + "\" " + std::to_string(std::max(f.replaced.size(), f.removed.size())) +
             " times within " + std::to_string(kWindowMillis / 1000) +
             " s; this host no longer writes it for this entry and keeps its own value in the "
             "timeline");
}

json WriteContest::filter(const std::string& task, json status) {
  auto it = tasks_.find(task);
  if (it == tasks_.end() || !status.is_object()) return status;
  Task& t = it->second;
  for (const char* group : {"podStatuses", "serviceStatuses"}) {
    if (!status.contains(group) || !status[group].is_object()) continue;
    json& entries = status[group];
    for (auto e = entries.begin(); e != entries.end();) {
      json& patch = e.value();
      if (!patch.is_object()) {
        ++e;
        continue;
      }
      // Copied: the patch's own createTime may be erased below.
      const json* createField = member(patch, "createTime");
      const std::string create =
          createField != nullptr && createField->is_string() ? createField->get<std::string>() : "";
      bool anyTime = false;
      for (auto field = patch.begin(); field != patch.end();) {
        auto y = t.fields.find(FieldKey{group, e.key(), field.key()});
        if (y != t.fields.end() && y->second.yielded) {
          if (!create.empty() && !y->second.createTime.empty() &&
              !sameInstant(create, y->second.createTime)) {
            y->second = Field{}; // a new incarnation of the entry: no contest yet
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
    if (entries.empty()) status.erase(group);
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
  auto f =
      it->second.fields.find(FieldKey{std::string(group), std::string(entry), std::string(field)});
  return f != it->second.fields.end() && f->second.yielded;
}

void WriteContest::forget(const std::string& task) {
  tasks_.erase(task);
}

} // namespace kuscia_host::plugins
