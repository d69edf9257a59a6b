// The one model of Kuscia's objects as the bundled plugins see them: the entries of a KusciaTask's
// status, the conditions and addresses of pods, services and endpoints, which task each object
// belongs to, the status write itself, and the backoff of failed writes. Each timing rule lives
// here once; the plugins are policies over it.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <kuscia_model/backoff.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/status_patch.h>

namespace kuscia_host::model {

// --- status entries (podStatuses / serviceStatuses of a KusciaTask) -----------------------------

// The instant of a time field of a status entry, if it is there and parses.
std::optional<int64_t> entryTime(const nlohmann::json* entry, std::string_view field);
// Whether the entry holds `field` with a value (not null).
bool entryHas(const nlohmann::json* entry, std::string_view field);
// Whether the entry describes this incarnation of the object: its createTime is the object's (an
// entry without one, or an object without one, counts as this incarnation).
bool sameIncarnation(const nlohmann::json* entry, std::optional<int64_t> createNanos);
// Sets the patch's `field` to `want` when the entry does not already hold it (compared as
// instants, at the precision another writer serialises: sameTime in write_contest.h), or, with no
// `want`, clears it when `clearStale` and the entry holds one (an earlier incarnation's). True
// when it does or would (patch nullptr: only the answer, nothing built). `forwardOnly`: a later
// time the entry holds is kept (the latest Ready another writer saw).
bool setEntryTime(StatusPatch::Entry* patch, const nlohmann::json* entry, TimeField field,
                  std::optional<int64_t> want, bool clearStale, bool forwardOnly = false);

// An entry's time fields read once: what the functions above read of it, for a plugin that
// compares the same entry on many events (task-timeline compares each of its entries on every
// event of the entry's object and of the task, each comparison reading three or four times).
class EntryClock {
public:
  explicit EntryClock(const nlohmann::json* entry);
  // An entry that is there, none of its fields read yet (set() adds them): what a reader of the
  // entry's text builds (entryClockOfText, status_entries.h).
  static EntryClock presentEntry() {
    EntryClock c(nullptr);
    c.present_ = true;
    return c;
  }
  // The entry holds `field` with a value (not null): `nanos` when it is a time that parses.
  void set(TimeField field, std::optional<int64_t> nanos) {
    has_ |= bit(field);
    times_[static_cast<std::size_t>(field)] = nanos;
  }
  // The entry no longer holds `field` (a merge patch's null removed it).
  void clear(TimeField field) {
    has_ &= static_cast<uint8_t>(~bit(field));
    times_[static_cast<std::size_t>(field)].reset();
  }
  bool present() const { return present_; } // the entry is an object
  std::optional<int64_t> time(TimeField field) const;
  bool has(TimeField field) const { return (has_ & bit(field)) != 0; }

private:
  static uint8_t bit(TimeField field) {
    return static_cast<uint8_t>(1U << static_cast<unsigned>(field));
  }
  std::array<Instant, 4> times_{}; // by TimeField
  uint8_t has_ = 0;                // a value, not null, by TimeField
  bool present_ = false;
};
bool sameIncarnation(const EntryClock& entry, std::optional<int64_t> createNanos);
bool setEntryTime(StatusPatch::Entry* patch, const EntryClock& entry, TimeField field,
                  std::optional<int64_t> want, bool clearStale, bool forwardOnly = false);

// --- objects -------------------------------------------------------------------------------------

// The condition of `type` in a status.conditions array when its status is "True", or nullptr.
const nlohmann::json* trueCondition(const nlohmann::json& conditions, std::string_view type);
// Whether an Endpoints object's subsets hold at least one (ready) address.
bool endpointsHaveAddress(const nlohmann::json& subsets);
// Whether the Endpoints `key` as the host caches them through `subscription` (projecting only
// /subsets) hold an address; false when the host has none.
bool cachedEndpointsHaveAddress(const sdk::Host& host, uint64_t subscription,
                                const std::string& key);

// The objects ("<ns>/<name>") of each task; a task without objects is not kept.
class TaskMembers {
public:
  void add(const std::string& key, const std::string& task) { members_[task].insert(key); }
  // Takes `key` out of `task` ("": of none).
  void remove(const std::string& key, const std::string& task);
  const std::set<std::string>& members(const std::string& task) const;
  std::size_t tasks() const { return members_.size(); }

private:
  std::map<std::string, std::set<std::string>> members_;
};

// Which task each object ("<ns>/<name>") belongs to, and the objects of each task.
class TaskIndex {
public:
  // `key` belongs to `task` from now on ("" : to none).
  void assign(const std::string& key, const std::string& task);
  void erase(const std::string& key) { assign(key, ""); }
  const std::set<std::string>& members(const std::string& task) const {
    return members_.members(task);
  }
  std::size_t tasks() const { return members_.tasks(); }

private:
  std::map<std::string, std::string> taskOf_;
  TaskMembers members_;
};

// An object's UID as a record keeps it: a 64-bit digest, only ever compared to tell one
// incarnation from the next (0: none).
inline uint64_t uidDigest(std::string_view uid) {
  return uid.empty() ? 0 : std::hash<std::string_view>{}(uid) | 1;
}

// The keys ("<ns>/<name>") of one task's objects, in order: a view of a TaskObjects' index,
// valid until its next apply() or forget().
class TaskKeys {
public:
  using Keys = std::vector<const std::string*>;
  class Iterator {
  public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string*;
    using reference = const std::string&;
    Iterator() = default;
    explicit Iterator(Keys::const_iterator at) : at_(at) {}
    const std::string& operator*() const { return **at_; }
    const std::string* operator->() const { return *at_; }
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++at_;
      return before;
    }
    bool operator==(const Iterator& o) const { return at_ == o.at_; }
    bool operator!=(const Iterator& o) const { return at_ != o.at_; }

  private:
    Keys::const_iterator at_;
  };
  explicit TaskKeys(const Keys& keys) : keys_(&keys) {}
  Iterator begin() const { return Iterator(keys_->begin()); }
  Iterator end() const { return Iterator(keys_->end()); }
  bool empty() const { return keys_->empty(); }
  std::size_t size() const { return keys_->size(); }

private:
  const Keys* keys_;
};

// The objects of one kind (pods, services) that belong to tasks, keyed "<ns>/<name>", with the
// index of each task's objects. T has the members `uint64_t uid` (uidDigest) and `const
// std::string* task`: the name of the task the object belongs to, which this class owns (a key
// of its index, valid while the object is kept). The namespace and name are the key's
// (namespaceOf, nameOf). The index holds each task's name once, and pointers to its objects'
// keys (a record of its own per object, or the task's name per object, would hold both again:
// about 100 bytes an object).
//
// Hashed, not ordered: every event looks an object and its task up, and the walk of a tree of
// thousands of string keys was most of the memory stalls of a busy host (perf, L1); nodes stay
// where they are when the table grows, so the keys the index points to do too.
template <class T> class TaskObjects {
public:
  using Map = std::unordered_map<std::string, T>;
  // The object `key` as an event shows it: one that names no task is forgotten (nullptr);
  // otherwise its record, fresh when its UID changed (a new incarnation under the same name),
  // now belonging to `task`.
  T* apply(const std::string& key, std::string_view uid, const std::string& task) {
    if (task.empty()) {
      forget(key);
      return nullptr;
    }
    auto [it, added] = objects_.try_emplace(key);
    T& o = it->second;
    if (o.task == nullptr || *o.task != task) {
      if (o.task != nullptr) removeMember(it->first, *o.task);
      o.task = addMember(it->first, task);
    }
    if (uint64_t id = uidDigest(uid); o.uid != id) {
      const std::string* owner = o.task;
      o = T{};
      o.uid = id;
      o.task = owner;
    }
    return &o;
  }
  // The object is gone: the task it belonged to ("" when none).
  std::string forget(const std::string& key) {
    auto it = objects_.find(key);
    if (it == objects_.end()) return "";
    std::string task = it->second.task != nullptr ? *it->second.task : std::string();
    if (!task.empty()) removeMember(it->first, task);
    objects_.erase(it);
    return task;
  }
  TaskKeys members(const std::string& task) const {
    static const TaskKeys::Keys none;
    auto it = members_.find(task);
    return TaskKeys(it == members_.end() ? none : it->second);
  }
  typename Map::const_iterator find(const std::string& key) const { return objects_.find(key); }
  typename Map::const_iterator begin() const { return objects_.begin(); }
  typename Map::const_iterator end() const { return objects_.end(); }
  const T& at(const std::string& key) const { return objects_.at(key); }
  T& at(const std::string& key) { return objects_.at(key); }
  std::size_t size() const { return objects_.size(); }
  // Tasks with an object (tests).
  std::size_t tasks() const { return members_.size(); }

private:
  static bool keyBefore(const std::string* a, const std::string* b) { return *a < *b; }
  // Adds the key (of a node of objects_) to the task's members; the task's name as kept.
  const std::string* addMember(const std::string& key, const std::string& task) {
    auto [it, added] = members_.try_emplace(task);
    auto& keys = it->second;
    keys.insert(std::lower_bound(keys.begin(), keys.end(), &key, keyBefore), &key);
    return &it->first;
  }
  void removeMember(const std::string& key, const std::string& task) {
    auto it = members_.find(task);
    if (it == members_.end()) return;
    auto& keys = it->second;
    auto at = std::lower_bound(keys.begin(), keys.end(), &key, keyBefore);
    if (at != keys.end() && *at == &key) keys.erase(at);
    if (keys.empty()) members_.erase(it);
  }

  Map objects_;
  // Task -> its objects' keys (pointers to the keys of objects_, in their order).
  std::unordered_map<std::string, TaskKeys::Keys> members_;
};

// --- writes --------------------------------------------------------------------------------------

// A JSON merge patch of a Kuscia object (`resource`: kusciatasks, kusciajobs) or of its
// `subresource` ("status"; "" the object), with `body`.
sdk::KubeRequest kusciaMergePatch(const char* resource, const std::string& ns,
                                  const std::string& name, const char* subresource,
                                  std::string body);

// A JSON merge patch of kusciatasks/<task>/status carrying `status`.
sdk::KubeRequest taskStatusPatch(const std::string& taskNamespace, const std::string& task,
                                 const nlohmann::json& status);
sdk::KubeRequest taskStatusPatch(const std::string& taskNamespace, const std::string& task,
                                 const StatusPatch& status);

} // namespace kuscia_host::model
