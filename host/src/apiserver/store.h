// The embedded API server's object store: every object of every resource in memory, one global
// monotonic resourceVersion, a bounded history of change events, and the watchers those events
// are delivered to. All writes are read-modify-write under one lock, so a watcher registered
// under the lock sees exactly the events after its starting point, in order.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apimachinery/selector.h"
#include "apiserver/errors.h"
#include "apiserver/resources.h"

namespace kuscia_host::apiserver {

struct WatchEvent {
  uint64_t rv = 0;
  const ResourceInfo* resource = nullptr;
  std::string type; // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  std::shared_ptr<const nlohmann::json> object;
  std::shared_ptr<const std::string> line; // {"type":...,"object":...}\n, built once
};

struct WatchFilter {
  const ResourceInfo* resource = nullptr;
  std::string namespaceName; // empty: all
  apimachinery::LabelSelector labels;
  apimachinery::FieldSelector fields;
  bool matches(const WatchEvent& e) const;
};

// One watch stream's queue. The store pushes under its lock; the session drains. A watcher whose
// queue exceeds its capacity is marked overflowed and must be closed (as upstream closes slow
// watchers), so a slow client never blocks writers or other watchers.
class Watcher {
public:
  Watcher(WatchFilter filter, std::size_t capacity);
  // Called (on the pushing thread) whenever lines are queued or the watcher closes.
  void setWake(std::function<void()> wake);
  void push(const WatchEvent& e);                         // filters; called under the store lock
  void pushLine(std::shared_ptr<const std::string> line); // unfiltered (bookmarks, errors)
  // Moves queued lines into `out`; false once overflowed or closed.
  bool drain(std::vector<std::shared_ptr<const std::string>>& out);
  void close();
  bool closed() const;
  bool overflowed() const;
  void addCapacity(std::size_t n) { capacity_ += n; }
  const WatchFilter& filter() const { return filter_; }

private:
  WatchFilter filter_;
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::function<void()> wake_;
  std::deque<std::shared_ptr<const std::string>> queue_;
  bool overflowed_ = false;
  bool closed_ = false;
};

// An object as stored: the JSON and its serialization, made once per write and shared by every
// GET, LIST and watch event that returns this version.
struct StoredObject {
  std::shared_ptr<const nlohmann::json> object; // immutable once stored
  std::shared_ptr<const std::string> text;
};

struct ListResult {
  std::vector<std::shared_ptr<const std::string>> items;
  uint64_t rv = 0;
  std::string continueToken;
  int64_t remaining = 0;
};

class Store {
public:
  explicit Store(std::size_t historyLimit = 10000);

  uint64_t currentRv() const;

  ApiResult<StoredObject> get(const ResourceInfo& r, const std::string& ns,
                              const std::string& name) const;
  ApiResult<ListResult> list(const ResourceInfo& r, const std::string& ns,
                             const apimachinery::LabelSelector& labels,
                             const apimachinery::FieldSelector& fields, int64_t limit,
                             const std::string& continueToken) const;

  // Read-modify-write of one object under the lock. `mutate` receives the current object (or
  // nullptr) and returns the object to store, nullopt to delete it, or an error. The store sets
  // metadata.resourceVersion and emits the event; returning the current object unchanged is a
  // no-op (no new resourceVersion, no event).
  using Mutator = std::function<ApiResult<std::optional<nlohmann::json>>(const nlohmann::json*)>;
  ApiResult<StoredObject> mutate(const ResourceInfo& r, const std::string& ns,
                                 const std::string& name, const Mutator& mutate);

  // Deletes every object in namespace `ns` (namespace deletion); emits DELETED events.
  void deleteNamespaceContents(const std::string& ns);

  // Registers a watcher starting after `rv` ("" or "0": replay current objects as ADDED first).
  // 410 Expired when rv is older than the history; 504 "too large" when it is newer than the
  // store (the client saw a server that has since lost its state).
  ApiResult<std::shared_ptr<Watcher>> watch(WatchFilter filter, const std::string& rv,
                                            std::size_t capacity);
  void unwatch(const std::shared_ptr<Watcher>& w);
  // Queues a BOOKMARK at the current resourceVersion (ordered after every event queued before).
  void bookmark(const std::shared_ptr<Watcher>& w);

  // Fault injection: forget the history (the next watch from an old rv gets 410) / close every
  // watcher.
  void compact();
  void dropWatchers();
  // Writes raw bytes into every open watch stream (fault injection: malformed events).
  void injectLine(const std::string& bytes);
  std::size_t watcherCount() const;

  // Benchmarks and tests: called with every change as it is stored (under the store's lock, on the
  // writer's thread: keep it short). nullptr removes it.
  using Observer = std::function<void(const WatchEvent&)>;
  void setObserver(Observer observer);

private:
  using Objects = std::map<std::string, StoredObject>; // "ns/name" -> object
  void emit(const ResourceInfo& r, const std::string& type, const StoredObject& object,
            uint64_t rv);

  mutable std::mutex mu_;
  uint64_t rv_ = 1;
  uint64_t compactedRv_ = 1; // events with rv <= this are gone
  std::size_t historyLimit_;
  std::map<const ResourceInfo*, Objects> objects_;
  std::deque<WatchEvent> history_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  Observer observer_;
};

} // namespace kuscia_host::apiserver
