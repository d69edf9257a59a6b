// What plugin instances need from the cluster, as one interface: declare a subscription, read
// the cache through it, send a write. KubeClientBridge implements it over the shared informers;
// tests substitute their own to drive an instance's Kubernetes side without a server.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "kube/informer.h"
#include "kube/kube_client.h"

namespace kuscia_host {

// One object as a subscription sees it: identity and the declared fields as a JSON array.
struct KubeObject {
  std::string key; // "<namespace>/<name>"
  std::string uid;
  std::string resourceVersion;
  std::string fieldsJson;
  std::string rawJson; // only for subscriptions that want the raw object
  // An event's object is this record as `subscription` sees it, rendered into the strings above
  // by materialize() when the plugin gets it: a queued event holds a reference, not a copy of
  // the fields' text (an initial sync of many objects queues one per subscriber).
  kube::RecordPtr record;
  const kube::Subscription* subscription = nullptr;
  void materialize();
};

class KubeBridge {
public:
  // Runs on an informer thread: it must only hand the change over (taking `object`, which is
  // handed over by reference: a KubeObject passed by value through each std::function layer was
  // moved string by string). `object` is empty for kSynced.
  using EventSink =
      std::function<void(uint64_t subscription, kube::ChangeType, KubeObject&& object)>;
  // Returns true to stop the iteration.
  using Visitor = std::function<bool(const KubeObject&)>;
  enum class Lookup {
    kOk,
    kNotFound,    // no such subscription, or no such object in it
    kBadSelector, // the label selector does not parse
    kNoLabels,    // a label selector on a subscription that does not cache labels
    kStale,       // release: the cache holds a newer version than the one named
  };

  virtual ~KubeBridge() = default;
  // Before the informers start only; validates the spec.
  virtual Result<uint64_t> subscribe(kube::SubscriptionSpec spec, EventSink sink) = 0;
  virtual Lookup get(uint64_t subscription, std::string_view key, const Visitor& visit) = 0;
  // Visits the cached objects of the subscription that match `labelSelector` ("" = all). The
  // visitor may call back into the host: the matching objects are collected first.
  virtual Lookup list(uint64_t subscription, const std::string& labelSelector,
                      const Visitor& visit) = 0;
  // The subscription is done with `key` as of resourceVersion `rv` (kube::Informer::release):
  // kOk, kNotFound or kStale. A bridge that keeps no cache of its own forgets nothing.
  virtual Lookup release(uint64_t /*subscription*/, std::string_view /*key*/,
                         std::string_view /*rv*/) {
    return Lookup::kNotFound;
  }
  // Sends a request (kh_kube_request_t: create, patch, update, delete); `done` runs once, on an
  // io thread. Errors: the request is invalid.
  virtual Result<void> request(const kube::KubeRequest& req,
                               std::function<void(kube::KubeResult)> done) = 0;
};

class KubeClientBridge final : public KubeBridge {
public:
  explicit KubeClientBridge(kube::KubeClient& client) : client_(client) {}

  Result<uint64_t> subscribe(kube::SubscriptionSpec spec, EventSink sink) override;
  Lookup get(uint64_t subscription, std::string_view key, const Visitor& visit) override;
  Lookup list(uint64_t subscription, const std::string& labelSelector,
              const Visitor& visit) override;
  Lookup release(uint64_t subscription, std::string_view key, std::string_view rv) override;
  Result<void> request(const kube::KubeRequest& req,
                       std::function<void(kube::KubeResult)> done) override;

private:
  kube::KubeClient& client_;
};

} // namespace kuscia_host
