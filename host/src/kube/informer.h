// Informer: one reflector (list, then watch, as client-go's tools/cache/reflector.go does; the
// README's "Cluster access and informers" lists the rules it follows) for one resource in one
// namespace (or all), its compact cache, and the subscriptions it feeds. Every plugin
// subscription to the same resource shares it; the cache keeps the union of their fields.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <shared_mutex>
#include <spdlog/logger.h>
#include <string>
#include <vector>

#include "apimachinery/selector.h"
#include "kube/api_client.h"
#include "kube/digest_table.h"
#include "kube/frame_splitter.h"
#include "kube/object_cache.h"
#include "kube/projection.h"
#include "kube/record_codec.h"
#include "runtime/clock.h"

namespace kuscia_host::kube {

// What an informer delivers to a subscriber; the values are the ABI's KH_EVENT_* (plugin_kube.cc
// checks it at compile time).
enum class ChangeType { kAdded = 1, kModified = 2, kDeleted = 3, kSynced = 4 };

// What a subscriber declared (kh_subscription_t, validated).
struct SubscriptionSpec {
  std::string group;
  std::string version;
  std::string resource;
  std::string namespaceName; // "" = every namespace
  std::string labelSelector;
  std::vector<std::string> fields; // JSON pointers
  bool wantRaw = false;
};

// One subscriber's view of an informer. The sink runs on the informer's thread and must only
// hand the change over (post it to the subscriber's executor).
class Subscription {
public:
  using Sink = std::function<void(const Subscription&, ChangeType, RecordPtr)>;
  Subscription(uint64_t id, SubscriptionSpec spec, apimachinery::LabelSelector selector, Sink sink);

  uint64_t id() const { return id_; }
  const SubscriptionSpec& spec() const { return spec_; }
  // Its position among the informer's subscriptions: its bit in Record::released().
  std::size_t index() const { return index_; }
  // Whether the object is in this subscription's namespace and selector.
  bool matches(const Record& r) const;
  // The declared fields of `r`, as a JSON array in declaration order (null when absent).
  std::string fieldsJson(const Record& r) const {
    std::string out;
    fieldsJsonInto(r, out);
    return out;
  }
  // The same written over `out`, whose capacity is kept.
  void fieldsJsonInto(const Record& r, std::string& out) const;
  // Whether any declared field (or the raw object, with wantRaw) differs.
  bool differs(const Record& a, const Record& b) const;

private:
  friend class Informer;
  void deliver(ChangeType t, const RecordPtr& r) const { sink_(*this, t, r); }
  // Old and new state of one object (either may be empty): the change this subscriber sees.
  void change(const RecordPtr& before, const RecordPtr& after) const;

  uint64_t id_;
  std::size_t index_ = 0;
  SubscriptionSpec spec_;
  apimachinery::LabelSelector selector_;
  Sink sink_;
  std::vector<std::size_t> slots_; // informer field slots, in declaration order
  std::string prefix_;             // "<namespace>/" or "" for all
};

struct ReflectorOptions {
  std::size_t pageSize = 500;
  std::chrono::milliseconds initialBackoff{800};
  std::chrono::milliseconds maxBackoff{30000};
  std::chrono::milliseconds resetBackoffAfter{120000};
  int minWatchTimeoutSeconds = 300;
  int maxWatchTimeoutSeconds = 600;
  // HttpRequest::readGrid of the watches: events that come within it are read together.
  std::chrono::milliseconds watchBatch{0};
  std::chrono::milliseconds shortWatch{1000}; // a watch ending sooner with no event is an error
  // Cold records are packed (see object_cache.h): listed ones at once, watched ones once two
  // sweeps have found them unchanged, so between one and two `sweepEvery` after their last
  // change (5 to 10 s: a task and its pods settle within seconds of starting, and then hold
  // still while they run). Records whose raw object and fields are shorter than packMinBytes
  // stay plain (a pod's projected status is about 250 bytes, a service's fields under 100);
  // 0 turns packing off.
  std::size_t packMinBytes = 96;
  std::chrono::milliseconds sweepEvery{5000};
  std::size_t packPerSweep = 20000; // bounds the work of one sweep, done in chunks (packCold)
};

class Informer : public std::enable_shared_from_this<Informer> {
public:
  // `clock` (monotonic) times backoff resets and short watches.
  Informer(boost::asio::io_context& io, std::shared_ptr<ApiClient> api, KubeMetrics& metrics,
           const Clock& clock, std::shared_ptr<spdlog::logger> logger, std::string group,
           std::string version, std::string resource, std::string namespaceName,
           ReflectorOptions options);
  ~Informer();

  // Before start() only. Fails on a bad selector or JSON pointer.
  Result<std::shared_ptr<Subscription>> subscribe(uint64_t id, SubscriptionSpec spec,
                                                  Subscription::Sink sink);
  // Builds the decoder for the declared fields (start() does this first). After prepare(),
  // ingest() feeds watch-stream bytes through the same path a watch takes (frame split, decode,
  // project, cache, dispatch) without a server: the watch-ingest benchmark uses it.
  void prepare();
  void ingest(std::string_view watchBytes);
  void start();
  void stop();

  // "pods", "widgets.example.com", with "@<namespace>" when namespaced.
  const std::string& id() const { return id_; }
  bool synced() const { return synced_; }
  // Why the informer is not synced (last error), "" when it is.
  std::string status() const;

  RecordPtr get(std::string_view key) const;
  // kh_host_api_v1_t.cache_release: subscription `sub` is done with `key` as of resourceVersion
  // `rv`. Once every subscription that sees the object released it, the informer forgets the
  // record (on its strand) and keeps a digest: an unchanged object stays forgotten through
  // watches and relists, a changed one comes back as ADDED, a deleted one goes silently. Only
  // the first 64 subscriptions of an informer can release. Any thread.
  enum class Release { kReleased, kNotFound, kStale };
  Release release(const Subscription& sub, std::string_view key, std::string_view rv);
  // Objects forgotten (released by every subscriber), whose digest is kept.
  std::size_t forgotten() const { return forgottenCount_.load(std::memory_order_relaxed); }
  template <class Fn> void forEach(Fn&& fn) const {
    std::shared_lock lock(cacheMu_);
    cache_.forEach(fn);
  }
  std::size_t size() const;
  // Packs the records that the previous sweep found too and that have not changed since (the
  // informer runs it every sweepEvery). On the informer's strand, or with ingest() on the
  // ingesting thread.
  void sweep();

private:
  void list(const std::string& resourceVersion, bool paged);
  void page(uint64_t gen, const std::string& resourceVersion, const std::string& continueToken,
            bool paged, const std::shared_ptr<ObjectCache>& pending);
  void replace(const std::shared_ptr<ObjectCache>& pending, const std::string& resourceVersion);
  // The first list's page: cached and delivered at once (see list()).
  void stream(std::vector<RecordPtr>& items);
  // A list is in: the watch starts from `resourceVersion`; SYNCED the first time.
  void listed(const std::string& resourceVersion);
  void watch();
  void onWatchData(uint64_t gen, std::string_view bytes);
  void onWatchDone(uint64_t gen, Result<HttpResponse> r);
  void apply(WatchEventType type, const Projected& object);
  void after(std::chrono::milliseconds delay, std::function<void()> fn);
  std::chrono::milliseconds nextBackoff();
  void noteError(const std::string& what);
  void decodeError(const std::string& what);
  std::string basePath() const;
  int64_t nowMs() const;
  void updateGauges();
  // Packs what can be packed in `records` (makes the codec from them when there is none yet).
  void pack(std::vector<RecordPtr>& records);
  // Packs cold[from, from + kPackChunk) and swaps what is still cached in; the rest on a later
  // turn of the strand. On the strand.
  void packCold(const std::shared_ptr<std::vector<RecordPtr>>& cold, std::size_t from);
  static constexpr std::size_t kPackChunk = 64;
  void scheduleSweep();
  // Whether every subscription that sees `r` released it.
  bool fullyReleased(const Record& r) const;
  // On the strand: drops `key`'s record if it is still fully released, keeping its digest.
  void forget(const std::string& key);
  // The subscriptions (bits) whose view does not differ between the two versions, among those
  // that released `before`: their releases carry over to `after`.
  uint64_t unchangedFor(const Record& before, const Record& after) const;
  static uint64_t keyHash(std::string_view key) { return std::hash<std::string_view>{}(key); }
  static constexpr std::size_t kDictionarySamples = 8;
  static constexpr std::size_t kMaxReleasing = 64; // subscriptions that can release

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::shared_ptr<ApiClient> api_;
  KubeMetrics& metrics_;
  const Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;
  std::string group_, version_, resource_, namespace_;
  std::string id_;
  ReflectorOptions options_;

  FieldPaths paths_;
  std::unique_ptr<Decoder> decoder_;
  bool keepLabels_ = false;
  bool keepRaw_ = false;
  std::vector<std::shared_ptr<Subscription>> subs_;

  mutable std::shared_mutex cacheMu_;
  ObjectCache cache_;
  const RecordCodec* codec_ = nullptr; // made from the first records big enough to pack
  // Forgotten objects: key hash -> digest (Record::digest). Touched only on strand_. A relist
  // builds the next map in listForgotten_ (the entries it found unchanged) and takes it.
  DigestTable forgotten_;
  DigestTable listForgotten_;
  std::atomic<std::size_t> forgottenCount_{0};
  // Objects forgotten since free memory was last returned to the system, and whether a return
  // is due (a second after the first of kForgetsToReturn: the rest of the burst rides along).
  std::size_t forgetsSinceReturn_ = 0;
  bool returnDue_ = false;

  // Reflector state: touched only on strand_ (lists, the watch stream, timers), except through
  // ingest() in benchmarks, which run without a server.
  std::atomic<bool> stopped_{false};
  std::atomic<bool> synced_{false};
  std::atomic<uint64_t> gen_{0};
  std::string lastRv_;
  bool lastRvExpired_ = false;
  FrameSplitter splitter_;
  Projected scratch_;
  int64_t watchStarted_ = 0;
  uint64_t watchEvents_ = 0;
  bool watchExpired_ = false;
  bool watchBroken_ = false;
  bool watchRegressed_ = false; // a resourceVersion older than the last one arrived
  bool firstWatch_ = true;
  bool firstList_ = true;
  bool streaming_ = false; // the list in progress goes straight to the cache (list())
  std::mutex streamMu_;
  std::shared_ptr<HttpTransport::Stream> stream_;
  std::optional<boost::asio::steady_timer> sweepTimer_; // on strand_
  std::chrono::milliseconds backoff_{0};
  int64_t lastFailure_ = 0;
  std::minstd_rand rng_;
  mutable std::mutex statusMu_;
  std::string lastError_;
  bool loggedDecodeError_ = false;

  MetricSeries* restarts_;
  MetricSeries* relists_;
  MetricSeries* decodeErrors_;
  MetricSeries* objects_;
  MetricSeries* bytes_;
  MetricSeries* packed_;
  MetricSeries* forgottenGauge_;
  std::array<MetricSeries*, 6> eventSeries_{};
};

} // namespace kuscia_host::kube
