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

#include "apiserver/resources.h"
#include "apiserver/selector.h"

namespace kuscia_host::apiserver {

// An error answered as a metav1.Status.
struct ApiError {
  int code = 500;
  std::string reason;
  std::string message;
  nlohmann::json details; // {name, group, kind, causes}
};

template <class T> struct ApiResult {
  ApiResult(T v) : value(std::move(v)) {}        // NOLINT(google-explicit-constructor)
  ApiResult(ApiError e) : error(std::move(e)) {} // NOLINT(google-explicit-constructor)
  bool ok() const { return !error.has_value(); }
  std::optional<T> value;
  std::optional<ApiError> error;
};

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
  LabelSelector labels;
  FieldSelector fields;
  bool matches(const WatchEvent& e) const;
};

// One watch stream's queue. The store pushes under its lock; the session drains. A watcher whose
// queue exceeds its capacity is marked overflowed and must be closed (as upstream closes slow
// watchers), so a slow client never blocks writers or other watchers.
class Watcher {
public:
  Watcher(WatchFilter filter, std::size_t capacity, std::function<void()> wake);
  void push(const WatchEvent& e);                         // filters; called under the store lock
  void pushLine(std::shared_ptr<const std::string> line); // unfiltered (bookmarks, errors)
  // Moves queued lines into `out`; false once overflowed or closed.
  bool drain(std::vector<std::shared_ptr<const std::string>>& out);
  void close();
  bool closed() const;
  bool overflowed() const;
  // Set when the stream must end once the queue is drained (e.g. after a 410 ERROR event).
  void endAfterDrain() { endAfterDrain_ = true; }
  bool ending() const { return endAfterDrain_; }
  void addCapacity(std::size_t n) { capacity_ += n; }
  const WatchFilter& filter() const { return filter_; }

private:
  WatchFilter filter_;
  std::size_t capacity_;
  std::function<void()> wake_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<const std::string>> queue_;
  bool overflowed_ = false;
  bool closed_ = false;
  bool endAfterDrain_ = false;
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
                             const LabelSelector& labels, const FieldSelector& fields,
                             int64_t limit, const std::string& continueToken) const;

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
  // 410 Expired when rv is older than the history.
  ApiResult<std::shared_ptr<Watcher>> watch(WatchFilter filter, const std::string& rv,
                                            std::size_t capacity, std::function<void()> wake);
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
};

// A metav1.Status body for an error.
nlohmann::json statusBody(const ApiError& e);
ApiError notFound(const ResourceInfo& r, const std::string& name);
ApiError conflict(const ResourceInfo& r, const std::string& name, const std::string& why);

} // namespace kuscia_host::apiserver
