// The Kubernetes side of the ABI for one plugin instance: subscribe (from on_create only),
// cache_get and cache_list through a subscription, and kube_request with its completion.
// Events and completions are handed to the instance's executor; requests still pending when the
// instance stops complete with http_code 0. The cluster is reached through a KubeBridge.
#pragma once

#include <kuscia_host/abi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plugin_host/kube_bridge.h"

namespace kuscia_host {

class PluginKube {
public:
  struct Callbacks {
    // Runs `fn` on the instance's executor.
    std::function<void(std::function<void()> fn)> post;
    // On the executor: hand these to the plugin (on_event, on_kube_result).
    std::function<void(const kh_event_t&)> event;
    std::function<void(const kh_kube_result_t&)> result;
    // Counts an invalid call from the plugin.
    std::function<void(const char* call)> callError;
    // How many events wait for the plugin now, after each change of the queue (called under the
    // queue's lock: keep it to a store); may be empty.
    std::function<void(std::size_t queued)> queued;
  };

  // `bridge` may be null: no cluster is configured.
  PluginKube(KubeBridge* bridge, std::string domain, Callbacks callbacks);

  bool available() const { return bridge_ != nullptr; }
  // subscribe is accepted only between these two (on_create).
  void setCreating(bool creating) { creating_ = creating; }

  kh_status_t subscribe(const kh_subscription_t* sub, uint64_t* outId, std::string& err);
  kh_status_t cacheGet(uint64_t subscription, const char* key, kh_object_visitor_t visitor,
                       void* user);
  kh_status_t cacheList(uint64_t subscription, const char* selector, kh_object_visitor_t visitor,
                        void* user);
  kh_status_t cacheRelease(uint64_t subscription, const char* key, const char* resourceVersion);
  kh_status_t request(const kh_kube_request_t* req, uint64_t* outId, std::string& err);

  // No more events and no new requests; any thread.
  void stop() {
    stopping_ = true;
    *abandoned_ = true;
  }
  // Completes every pending request with http_code 0. On the executor, after stop().
  void failPending();
  // Requests sent and not yet completed.
  std::size_t pending() const;

private:
  bool owns(uint64_t subscription) const;
  void deliver(uint64_t subscription, kube::ChangeType type, KubeObject&& object);
  // On the executor: hands queued events to the plugin, a bounded number per turn.
  void drain();
  void complete(uint64_t id, const kube::KubeResult& result);

  // An event waiting for the executor: a reference to the cached record (32 bytes), not a
  // closure holding the object's rendered strings. An initial list of N objects queues N per
  // subscriber at once; as closures they were the host's peak memory (about 230 bytes each).
  // `object` holds an event that came already rendered (no record).
  struct Queued {
    uint64_t subscription = 0;
    kube::ChangeType type = kube::ChangeType::kAdded;
    kube::RecordPtr record;
    const kube::Subscription* view = nullptr;
    std::unique_ptr<KubeObject> object;
  };

  KubeBridge* bridge_;
  std::string domain_;
  Callbacks cb_;
  std::atomic<bool> creating_{false};
  std::atomic<bool> stopping_{false};
  // Shared with the requests in flight: their retries end when the instance stops.
  std::shared_ptr<std::atomic<bool>> abandoned_ = std::make_shared<std::atomic<bool>>(false);
  mutable std::mutex mu_;
  std::map<uint64_t, bool> subscriptions_; // id -> caches labels (selector or /metadata/labels)
  uint64_t nextRequestId_ = 0;
  std::map<uint64_t, uint64_t> pending_; // request id -> user tag
  std::mutex queueMu_;
  std::deque<Queued> queue_;
  bool drainPosted_ = false; // a drain() is on the executor's queue
};

} // namespace kuscia_host
