#include "kube/informer.h"

#include <kuscia_host/query.hpp>

#include <boost/asio/post.hpp>

#include <charconv>
#include <chrono>

#include "apimachinery/paths.h"
#include "apimachinery/status.h"
#include "common/free_memory.h"

namespace kuscia_host::kube {

namespace net = boost::asio;
using std::chrono::milliseconds;

namespace {

// The Status message of an error body, or the HTTP code.
std::string describe(const HttpResponse& r) {
  auto message = apimachinery::statusMessage(r.body);
  return "HTTP " + std::to_string(r.status) + (message ? ": " + *message : std::string());
}

// Whether resourceVersion `next` is older than `last`. Clients must treat resourceVersions as
// opaque, but every API server makes them from one increasing counter: when both are numbers, a
// smaller one means the server lost its state (an in-memory server restarted, etcd restored).
bool wentBackwards(std::string_view next, std::string_view last) {
  uint64_t n = 0;
  uint64_t l = 0;
  auto pn = std::from_chars(next.data(), next.data() + next.size(), n);
  auto pl = std::from_chars(last.data(), last.data() + last.size(), l);
  return pn.ec == std::errc() && pn.ptr == next.data() + next.size() && pl.ec == std::errc() &&
         pl.ptr == last.data() + last.size() && n < l;
}

bool tooLargeResourceVersion(const HttpResponse& r) {
  if (r.status != 504) return false;
  return r.body.find("ResourceVersionTooLarge") != std::string::npos ||
         r.body.find("Too large resource version") != std::string::npos;
}

} // namespace

// --- Subscription ------------------------------------------------------------------------

Subscription::Subscription(uint64_t id, SubscriptionSpec spec, apimachinery::LabelSelector selector,
                           Sink sink)
    : id_(id), spec_(std::move(spec)), selector_(std::move(selector)), sink_(std::move(sink)),
      prefix_(spec_.namespaceName.empty() ? std::string() : spec_.namespaceName + "/") {}

bool Subscription::matches(const Record& r) const {
  if (!prefix_.empty() && r.key().substr(0, prefix_.size()) != prefix_) return false;
  if (selector_.empty()) return true;
  return selector_.matches([&r](std::string_view k) { return r.label(k); });
}

void Subscription::fieldsJsonInto(const Record& record, std::string& out) const {
  PlainRecord r(record);
  // Sized first: a task's maps are kilobytes, which growing by doubling copies several times.
  std::size_t size = 2 + slots_.size() * 5; // brackets, commas, "null"s
  for (std::size_t s : slots_)
    size += r->field(s).size();
  out.clear();
  out.reserve(size);
  out += '[';
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (i > 0) out += ',';
    std::string_view v = r->field(slots_[i]);
    out += v.empty() ? std::string_view("null") : v;
  }
  out += ']';
}

bool Subscription::differs(const Record& before, const Record& after) const {
  PlainRecord a(before);
  PlainRecord b(after);
  for (std::size_t s : slots_)
    if (a->field(s) != b->field(s)) return true;
  return spec_.wantRaw && a->raw() != b->raw();
}

void Subscription::change(const RecordPtr& before, const RecordPtr& after) const {
  bool was = before && matches(*before);
  bool is = after && matches(*after);
  if (!was && is)
    deliver(ChangeType::kAdded, after);
  else if (was && is && differs(*before, *after))
    deliver(ChangeType::kModified, after);
  else if (was && !is)
    deliver(ChangeType::kDeleted, after ? after : before);
}

// --- Informer ----------------------------------------------------------------------------

Informer::Informer(net::io_context& io, std::shared_ptr<ApiClient> api, KubeMetrics& metrics,
                   const Clock& clock, std::shared_ptr<spdlog::logger> logger, std::string group,
                   std::string version, std::string resource, std::string namespaceName,
                   ReflectorOptions options)
    : strand_(net::make_strand(io)), api_(std::move(api)), metrics_(metrics), clock_(clock),
      logger_(std::move(logger)), group_(std::move(group)), version_(std::move(version)),
      resource_(std::move(resource)), namespace_(std::move(namespaceName)),
      id_(resource_ + (group_.empty() ? "" : "." + group_) +
          (namespace_.empty() ? "" : "@" + namespace_)),
      options_(options), rng_(std::random_device{}()) {
  restarts_ = metrics_.watchRestarts->series({id_});
  relists_ = metrics_.relists->series({id_});
  decodeErrors_ = metrics_.decodeErrors->series({id_});
  objects_ = metrics_.objectsCached->series({id_});
  bytes_ = metrics_.bytesCached->series({id_});
  packed_ = metrics_.packedCached->series({id_});
  forgottenGauge_ = metrics_.forgottenCached->series({id_});
  const char* types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "unknown"};
  for (std::size_t i = 0; i < eventSeries_.size(); ++i)
    eventSeries_[i] = metrics_.events->series({id_, types[i]});
}

Informer::~Informer() = default;

Result<std::shared_ptr<Subscription>> Informer::subscribe(uint64_t id, SubscriptionSpec spec,
                                                          Subscription::Sink sink) {
  auto selector = apimachinery::LabelSelector::parse(spec.labelSelector);
  if (!selector)
    return makeError("label selector '" + spec.labelSelector + "': " + selector.error());
  std::vector<std::size_t> slots;
  for (const auto& f : spec.fields) {
    if (f == "/metadata/labels") keepLabels_ = true; // a single label's pointer is just a field
    auto slot = paths_.add(f);
    if (!slot) return makeError(slot.error());
    slots.push_back(*slot);
  }
  if (!selector->empty()) keepLabels_ = true;
  keepRaw_ = keepRaw_ || spec.wantRaw;
  auto sub =
      std::make_shared<Subscription>(id, std::move(spec), std::move(*selector), std::move(sink));
  sub->slots_ = std::move(slots);
  sub->index_ = subs_.size();
  subs_.push_back(sub);
  return sub;
}

int64_t Informer::nowMs() const {
  return clock_.monotonicNanos() / 1000000;
}

std::string Informer::basePath() const {
  return apimachinery::resourcePath(group_, version_, namespace_, resource_);
}

void Informer::prepare() {
  if (!decoder_)
    decoder_ = std::make_unique<Decoder>(paths_, Decoder::Options{keepLabels_, keepRaw_});
}

void Informer::ingest(std::string_view watchBytes) {
  onWatchData(gen_, watchBytes);
}

void Informer::start() {
  prepare();
  net::post(strand_, [self = shared_from_this()] {
    self->list("0", true);
    self->scheduleSweep();
  });
}

void Informer::stop() {
  stopped_ = true;
  ++gen_;
  std::shared_ptr<HttpTransport::Stream> s;
  {
    std::lock_guard lock(streamMu_);
    s = std::move(stream_);
  }
  if (s) s->cancel();
  // The sweep's timer holds the informer: cancel it on the strand that owns it.
  net::post(strand_, [self = shared_from_this()] {
    if (self->sweepTimer_) self->sweepTimer_->cancel();
  });
}

std::string Informer::status() const {
  if (synced_) return "";
  std::lock_guard lock(statusMu_);
  return lastError_.empty() ? "initial list in progress" : lastError_;
}

RecordPtr Informer::get(std::string_view key) const {
  std::shared_lock lock(cacheMu_);
  return cache_.get(key);
}

Informer::Release Informer::release(const Subscription& sub, std::string_view key,
                                    std::string_view rv) {
  bool all = false;
  {
    std::shared_lock lock(cacheMu_);
    RecordPtr r = cache_.get(key);
    if (!r || !sub.matches(*r)) return Release::kNotFound;
    if (r->resourceVersion() != rv) return Release::kStale;
    if (sub.index() >= kMaxReleasing) return Release::kReleased; // kept: see release()
    r->release(uint64_t{1} << sub.index());
    all = fullyReleased(*r);
  }
  // The strand is the cache's only writer.
  if (all)
    net::post(strand_, [self = shared_from_this(), k = std::string(key)] { self->forget(k); });
  return Release::kReleased;
}

bool Informer::fullyReleased(const Record& r) const {
  uint64_t need = 0;
  for (const auto& s : subs_) {
    if (!s->matches(r)) continue;
    if (s->index() >= kMaxReleasing) return false;
    need |= uint64_t{1} << s->index();
  }
  return need != 0 && (r.released() & need) == need;
}

void Informer::forget(const std::string& key) {
  if (stopped_) return;
  RecordPtr r = cache_.get(key); // on the strand: no lock to read
  if (!r || !fullyReleased(*r)) return;
  uint64_t digest = r->digest();
  {
    std::unique_lock lock(cacheMu_);
    cache_.erase(key);
  }
  forgotten_.put(keyHash(key), digest);
  updateGauges();
  // Thousands forgotten at once (the finished tasks of a list, released by the plugins): their
  // records' pages go back to the system, not into the resident set beside the work that follows
  // (L1 beside 100,000 finished tasks peaked at 26.6 MiB with this, 27.5 without).
  constexpr std::size_t kForgetsToReturn = 1000;
  if (++forgetsSinceReturn_ >= kForgetsToReturn && !returnDue_) {
    returnDue_ = true;
    after(std::chrono::seconds(1), [this] {
      returnDue_ = false;
      forgetsSinceReturn_ = 0;
      returnFreeMemory();
    });
  }
}

std::size_t Informer::size() const {
  std::shared_lock lock(cacheMu_);
  return cache_.size();
}

void Informer::noteError(const std::string& what) {
  logger_->warn("informer {}: {}", id_, what);
  std::lock_guard lock(statusMu_);
  lastError_ = what;
}

void Informer::decodeError(const std::string& what) {
  decodeErrors_->add(1);
  // Logged once per informer; the counter tells how many followed.
  if (!loggedDecodeError_) {
    loggedDecodeError_ = true;
    logger_->warn("informer {}: skipped a malformed object: {} (further ones are only counted "
                  "in kuscia_host_kube_decode_errors_total)",
                  id_, what);
  }
}

milliseconds Informer::nextBackoff() {
  int64_t now = nowMs();
  if (backoff_.count() == 0 || now - lastFailure_ > options_.resetBackoffAfter.count())
    backoff_ = options_.initialBackoff;
  else
    backoff_ = std::min(options_.maxBackoff, backoff_ * 2);
  lastFailure_ = now;
  // Jitter: up to +50%.
  std::uniform_int_distribution<int64_t> jitter(0, backoff_.count() / 2);
  return backoff_ + milliseconds(jitter(rng_));
}

void Informer::after(milliseconds delay, std::function<void()> fn) {
  if (stopped_) return;
  auto timer = std::make_shared<net::steady_timer>(strand_, delay);
  timer->async_wait(
      [self = shared_from_this(), timer, fn = std::move(fn)](const boost::system::error_code&) {
        if (!self->stopped_) fn();
      });
}

// --- list --------------------------------------------------------------------------------

void Informer::list(const std::string& resourceVersion, bool paged) {
  if (stopped_) return;
  if (!firstList_) relists_->add(1);
  firstList_ = false;
  uint64_t gen = ++gen_;
  listForgotten_.clear();
  // The first list into an empty cache is delivered page by page (there is nothing to compare
  // with): subscribers can release what they are done with while the rest arrives, so a month of
  // finished objects never sits in memory at once. Any later list is compared with the cache.
  streaming_ = !synced_ && cache_.size() == 0 && forgotten_.empty();
  page(gen, resourceVersion, "", paged, std::make_shared<ObjectCache>());
}

void Informer::page(uint64_t gen, const std::string& rv, const std::string& continueToken,
                    bool paged, const std::shared_ptr<ObjectCache>& pending) {
  std::string target = basePath() + "?";
  if (paged) target += "limit=" + std::to_string(options_.pageSize) + "&";
  if (!continueToken.empty())
    target += "continue=" + sdk::percentEncode(continueToken); // never with a resourceVersion
  else if (!rv.empty())
    target += "resourceVersion=" + sdk::percentEncode(rv);
  if (target.back() == '&' || target.back() == '?') target.pop_back();
  ApiCall call{"list", HttpRequest{"GET", target, "", "", milliseconds(60000)}, true, 10};
  api_->call(std::move(call), [self = shared_from_this(), gen, rv, continueToken, paged,
                               pending](Result<HttpResponse> r) {
    net::post(self->strand_, [self, gen, rv, continueToken, paged, pending, r = std::move(r)] {
      if (self->stopped_ || gen != self->gen_) return;
      if (!r) {
        self->noteError("list failed: " + r.error());
        return self->after(self->nextBackoff(), [self, rv] { self->list(rv, true); });
      }
      if (r->status == 410) {
        if (!continueToken.empty()) {
          // The continue token expired: one full list at the original resourceVersion.
          self->noteError("list continuation expired; listing in one request");
          return self->list(rv, false);
        }
        self->noteError("list at resourceVersion " + rv + " is too old; listing the latest");
        return self->list("", true);
      }
      if (tooLargeResourceVersion(*r)) {
        self->noteError("list: resourceVersion " + rv + " is too large; listing the latest");
        return self->after(self->nextBackoff(), [self] { self->list("", true); });
      }
      if (r->status != 200) {
        self->noteError("list " + self->basePath() + " failed: " + describe(*r));
        return self->after(self->nextBackoff(), [self, rv] { self->list(rv, true); });
      }
      std::vector<RecordPtr> items;
      auto meta = self->decoder_->decodeList(
          r->body,
          [&](Projected& item) {
            if (!self->namespace_.empty() && item.namespaceName != self->namespace_) return;
            RecordPtr rec = RecordPtr::make(item, self->keepRaw_);
            if (!self->forgotten_.empty()) {
              // Forgotten and unchanged: it stays forgotten, never cached again.
              uint64_t h = keyHash(rec->key());
              auto kept = self->forgotten_.find(h);
              if (kept && DigestTable::same(*kept, rec->digest())) {
                self->listForgotten_.put(h, *kept);
                return;
              }
            }
            items.push_back(std::move(rec));
          },
          [&](const std::string& why) { self->decodeError(why); });
      // A listed object is taken as cold (most of a large list is history): packed at once, so
      // that a month of finished tasks never sits in memory as text, not even during the list.
      self->pack(items);
      if (self->streaming_) {
        self->stream(items);
      } else {
        for (auto& item : items)
          pending->put(std::move(item));
      }
      if (!meta) {
        self->decodeError("LIST page: " + meta.error());
        self->noteError("malformed LIST page: " + meta.error());
        return self->after(self->nextBackoff(), [self, rv] { self->list(rv, true); });
      }
      if (!meta->continueToken.empty())
        return self->page(gen, rv, meta->continueToken, paged, pending);
      self->replace(pending, meta->resourceVersion);
      self->watch();
    });
  });
}

void Informer::stream(std::vector<RecordPtr>& items) {
  std::vector<RecordPtr> before(items.size());
  {
    std::unique_lock lock(cacheMu_);
    for (std::size_t i = 0; i < items.size(); ++i)
      before[i] = cache_.put(items[i]);
  }
  for (std::size_t i = 0; i < items.size(); ++i)
    for (const auto& s : subs_)
      s->change(before[i], items[i]);
  updateGauges();
}

void Informer::replace(const std::shared_ptr<ObjectCache>& pending, const std::string& rv) {
  if (streaming_) {
    // Every page is in the cache and was delivered already.
    streaming_ = false;
    listForgotten_.clear();
    return listed(rv);
  }
  {
    std::unique_lock lock(cacheMu_);
    cache_.swap(*pending);
  }
  // What stayed forgotten; what changed comes back (ADDED below), what is gone goes silently.
  forgotten_.swap(listForgotten_);
  listForgotten_.clear();
  // `pending` now holds the previous state: report what changed.
  std::vector<std::string> released;
  cache_.forEach([&](const RecordPtr& now) {
    RecordPtr before = pending->get(now->key());
    if (before) now->release(before->released() & unchangedFor(*before, *now));
    if (!before || !before->sameContent(*now))
      for (const auto& s : subs_)
        s->change(before, now);
    if (now->released() != 0 && fullyReleased(*now)) released.emplace_back(now->key());
  });
  for (const auto& key : released)
    forget(key);
  pending->forEach([&](const RecordPtr& gone) {
    if (cache_.get(gone->key())) return;
    for (const auto& s : subs_)
      s->change(gone, RecordPtr());
  });
  listed(rv);
}

void Informer::listed(const std::string& rv) {
  lastRv_ = rv;
  lastRvExpired_ = false;
  updateGauges();
  if (!synced_) {
    synced_ = true;
    for (const auto& s : subs_)
      s->deliver(ChangeType::kSynced, RecordPtr());
    logger_->info("informer {} synced: {} object(s) at resourceVersion {} ({} forgotten)", id_,
                  cache_.size() + forgotten_.size(), rv, forgotten_.size());
  }
  std::lock_guard lock(statusMu_);
  lastError_.clear();
}

void Informer::pack(std::vector<RecordPtr>& records) {
  if (options_.packMinBytes == 0) return;
  if (codec_ == nullptr) {
    // The dictionary: the tails of a few records of this resource, spread over what is at hand.
    std::string samples;
    std::size_t step = std::max<std::size_t>(1, records.size() / kDictionarySamples);
    for (std::size_t i = 0; i < records.size() && samples.size() < RecordCodec::kMaxDictionary;
         i += step) {
      if (records[i]->packed() || records[i]->tailSize() < options_.packMinBytes) continue;
      PlainRecord p(*records[i]);
      for (uint32_t s = Record::kRaw; s < p->fieldCount() + Record::kFirstField; ++s)
        samples.append(p->slot(s)).push_back('\0');
    }
    codec_ = RecordCodec::make(samples);
    if (codec_ == nullptr) return;
  }
  for (auto& r : records)
    r = r.packed(*codec_, options_.packMinBytes);
}

void Informer::sweep() {
  // On the strand, the cache's only writer: reading it needs no lock, replacing does.
  auto cold = std::make_shared<std::vector<RecordPtr>>();
  cache_.forEach([&](const RecordPtr& r) {
    if (cold->size() < options_.packPerSweep && !r->packed() && !r->unpackable() &&
        r->tailSize() >= options_.packMinBytes && r->markSeen())
      cold->push_back(r);
  });
  if (!cold->empty()) packCold(cold, 0);
}

void Informer::packCold(const std::shared_ptr<std::vector<RecordPtr>>& cold, std::size_t from) {
  // A chunk per turn of the strand: the events that came meanwhile go between chunks, so a
  // sweep that finds a burst's records cold holds the strand for about 0.1 ms at a time, not
  // for the whole burst (about 2 us a record).
  const std::size_t to = std::min(cold->size(), from + kPackChunk);
  std::vector<RecordPtr> packed(cold->begin() + static_cast<std::ptrdiff_t>(from),
                                cold->begin() + static_cast<std::ptrdiff_t>(to));
  pack(packed);
  std::size_t n = 0;
  {
    std::unique_lock lock(cacheMu_);
    for (std::size_t i = from; i < to; ++i) {
      const RecordPtr& now = packed[i - from];
      if (!now->packed()) {
        (*cold)[i]->markUnpackable();
        continue;
      }
      // A record the watch replaced meanwhile is hot again: left plain.
      if (cache_.swapIfSame((*cold)[i], now)) {
        now->release((*cold)[i]->released()); // releases made meanwhile hold
        ++n;
      }
    }
  }
  if (n > 0) updateGauges();
  if (to < cold->size())
    net::post(strand_, [self = shared_from_this(), cold, to] {
      if (!self->stopped_) self->packCold(cold, to);
    });
}

void Informer::scheduleSweep() {
  if (options_.packMinBytes == 0 || options_.sweepEvery.count() <= 0) return;
  if (stopped_) return;
  if (!sweepTimer_) sweepTimer_.emplace(strand_);
  sweepTimer_->expires_after(options_.sweepEvery);
  sweepTimer_->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->stopped_) return;
    self->sweep();
    self->scheduleSweep();
  });
}

void Informer::updateGauges() {
  objects_->set(static_cast<double>(cache_.size()));
  bytes_->set(static_cast<double>(cache_.recordBytes() + cache_.indexBytes() + forgotten_.bytes()));
  packed_->set(static_cast<double>(cache_.packedCount()));
  forgottenCount_.store(forgotten_.size(), std::memory_order_relaxed);
  forgottenGauge_->set(static_cast<double>(forgotten_.size()));
}

// --- watch -------------------------------------------------------------------------------

void Informer::watch() {
  if (stopped_) return;
  if (!firstWatch_) restarts_->add(1);
  firstWatch_ = false;
  uint64_t gen = ++gen_;
  std::uniform_int_distribution<int> timeout(options_.minWatchTimeoutSeconds,
                                             options_.maxWatchTimeoutSeconds);
  int seconds = timeout(rng_);
  std::string target = basePath() + "?watch=true&allowWatchBookmarks=true&resourceVersion=" +
                       sdk::percentEncode(lastRv_) + "&timeoutSeconds=" + std::to_string(seconds);
  splitter_.reset();
  watchStarted_ = nowMs();
  watchEvents_ = 0;
  watchExpired_ = false;
  watchBroken_ = false;
  watchRegressed_ = false;
  auto self = shared_from_this();
  // The stream runs on this informer's strand: its data and its end are serialised with every
  // other step of the reflector.
  HttpRequest request{"GET", target, "", "", milliseconds((seconds + 60) * 1000)};
  request.readGrid = options_.watchBatch;
  auto s = api_->watch(
      std::move(request), strand_,
      [self, gen](std::string_view bytes) { self->onWatchData(gen, bytes); },
      [self, gen](Result<HttpResponse> r) { self->onWatchDone(gen, std::move(r)); });
  std::lock_guard lock(streamMu_);
  stream_ = std::move(s);
  if (stopped_ && stream_) stream_->cancel();
}

void Informer::onWatchData(uint64_t gen, std::string_view bytes) {
  if (stopped_ || gen != gen_ || watchExpired_ || watchBroken_ || watchRegressed_) return;
  splitter_.feed(bytes);
  std::string_view frame;
  while (true) {
    auto st = splitter_.next(frame);
    if (st == FrameSplitter::Status::kNeedMore) return;
    if (st == FrameSplitter::Status::kError) {
      decodeError(splitter_.error());
      noteError("watch stream broken: " + splitter_.error() + "; watching again");
      watchBroken_ = true;
      break;
    }
    auto type =
        decoder_->decodeEvent(frame, splitter_.capacityAfter(frame) + frame.size(), scratch_);
    if (!type && splitter_.guessed()) {
      splitter_.reject(); // not one object per line: split it by its brackets
      continue;
    }
    if (!type) {
      eventSeries_[5]->add(1);
      decodeError(type.error());
      continue;
    }
    ++watchEvents_;
    eventSeries_[static_cast<std::size_t>(*type)]->add(1);
    if (*type != WatchEventType::kError && *type != WatchEventType::kUnknown &&
        wentBackwards(scratch_.resourceVersion, lastRv_)) {
      noteError("resourceVersion went backwards (" + scratch_.resourceVersion + " after " +
                lastRv_ + "): the server lost its state; relisting");
      watchRegressed_ = true;
      break;
    }
    switch (*type) {
    case WatchEventType::kAdded:
    case WatchEventType::kModified:
    case WatchEventType::kDeleted:
      apply(*type, scratch_);
      lastRv_ = scratch_.resourceVersion;
      break;
    case WatchEventType::kBookmark: lastRv_ = scratch_.resourceVersion; break;
    case WatchEventType::kError:
      if (scratch_.code == 410) {
        watchExpired_ = true;
        noteError("watch expired (410 " + scratch_.reason + "): relisting");
      } else {
        watchBroken_ = true;
        noteError("watch ERROR event " + std::to_string(scratch_.code) + ": " + scratch_.message);
      }
      break;
    case WatchEventType::kUnknown: break; // ignored, as upstream clients do
    }
    if (watchExpired_ || watchBroken_) break;
  }
  // Ends the stream; onWatchDone decides what follows.
  std::lock_guard lock(streamMu_);
  if (stream_) stream_->cancel();
}

uint64_t Informer::unchangedFor(const Record& before, const Record& after) const {
  if (before.released() == 0) return 0;
  uint64_t keep = 0;
  for (const auto& s : subs_)
    if (s->index() < kMaxReleasing && s->matches(before) && s->matches(after) &&
        !s->differs(before, after))
      keep |= uint64_t{1} << s->index();
  return keep;
}

void Informer::apply(WatchEventType type, const Projected& object) {
  if (!namespace_.empty() && object.namespaceName != namespace_) return;
  RecordPtr rec = RecordPtr::make(object, keepRaw_);
  bool deleted = type == WatchEventType::kDeleted;
  if (!forgotten_.empty()) {
    // A forgotten object: unchanged for every subscriber, it stays forgotten; changed, it is new
    // to them (ADDED below); deleted, it goes without a word.
    uint64_t h = keyHash(rec->key());
    if (auto kept = forgotten_.find(h)) {
      if (!deleted && DigestTable::same(*kept, rec->digest())) return;
      forgotten_.erase(h);
      if (deleted && !cache_.get(rec->key())) return updateGauges();
    }
  }
  RecordPtr before;
  {
    std::unique_lock lock(cacheMu_);
    before = deleted ? cache_.erase(rec->key()) : cache_.put(rec);
  }
  // The releases of subscriptions that see no change carry over. Read after the swap: a release
  // finds either `before` (and is in its bits now) or `rec`.
  uint64_t keep = 0;
  if (!deleted && before) {
    keep = before->released() & unchangedFor(*before, *rec);
    if (keep != 0) rec->release(keep);
  }
  if (deleted) {
    // The last state: the event's object, seen by those who saw the object before.
    for (const auto& s : subs_)
      if ((before && s->matches(*before)) || (!before && s->matches(*rec)))
        s->deliver(ChangeType::kDeleted, rec);
  } else {
    for (const auto& s : subs_)
      s->change(before, rec);
    if (keep != 0 && fullyReleased(*rec)) return forget(std::string(rec->key()));
  }
  updateGauges();
}

void Informer::onWatchDone(uint64_t gen, Result<HttpResponse> r) {
  if (stopped_ || gen != gen_) return;
  {
    std::lock_guard lock(streamMu_);
    stream_.reset();
  }
  auto self = shared_from_this();
  if (watchExpired_ || (r && r->status == 410)) {
    // Relist from the last resourceVersion seen; if that is too old as well, the latest.
    std::string rv = lastRvExpired_ ? std::string() : lastRv_;
    lastRvExpired_ = true;
    return list(rv, true);
  }
  if (watchRegressed_) return list("", true); // the cache is from another history
  if (watchBroken_) return after(nextBackoff(), [self] { self->watch(); });
  if (r && tooLargeResourceVersion(*r)) {
    noteError("watch: resourceVersion too large; relisting");
    return after(nextBackoff(), [self] { self->list("", true); });
  }
  if (r && r->status != 200) {
    noteError("watch failed: " + describe(*r));
    return after(nextBackoff(), [self] { self->watch(); });
  }
  bool shortAndEmpty = watchEvents_ == 0 && nowMs() - watchStarted_ < options_.shortWatch.count();
  if (!r && watchEvents_ == 0) {
    // Connection refused, reset before anything arrived: back off, watch the same RV again.
    noteError("watch failed: " + r.error());
    return after(nextBackoff(), [self] { self->watch(); });
  }
  if (shortAndEmpty) {
    noteError("watch closed within " + std::to_string(options_.shortWatch.count()) +
              " ms without events; relisting");
    return after(nextBackoff(), [self] { self->list(self->lastRv_, true); });
  }
  // Normal end (timeout, or the server closed it): watch again from the last resourceVersion.
  watch();
}

} // namespace kuscia_host::kube
