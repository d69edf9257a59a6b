#include "kube/object_cache.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>

#include "kube/record_codec.h"

namespace kuscia_host::kube {
namespace {
// A packed record holds the address of its codec (unaligned, so copied in and out; object
// pointers are all the size of void*).
constexpr std::size_t kCodecRefBytes = sizeof(void*);
} // namespace

std::optional<std::string_view> Record::label(std::string_view name) const {
  // Labels are stored as "key\0value\0" pairs.
  std::string_view all = slot(kLabels);
  while (!all.empty()) {
    std::size_t k = all.find('\0');
    std::size_t v = all.find('\0', k + 1);
    if (all.substr(0, k) == name) return all.substr(k + 1, v - k - 1);
    all.remove_prefix(v + 1);
  }
  return std::nullopt;
}

bool Record::sameContent(const Record& o) const {
  if (count_ != o.count_ || hasLabels_ != o.hasLabels_) return false;
  for (uint32_t i = 0; i < kRaw; ++i)
    if (i != kResourceVersion && slot(i) != o.slot(i)) return false;
  if (tailSize() != o.tailSize()) return false;
  // One codec packs the same text to the same bytes.
  if (packed_ && o.packed_ && codec() == o.codec()) return packedTail() == o.packedTail();
  PlainRecord a(*this);
  PlainRecord b(o);
  for (uint32_t i = kRaw; i < count_; ++i)
    if (a->slot(i) != b->slot(i)) return false;
  return true;
}

uint64_t Record::digest() const {
  PlainRecord p(*this);
  // Each slot's hash, folded with a splitmix64 step so that order and boundaries count.
  uint64_t h = hasLabels_ ? 0x9e3779b97f4a7c15ULL : 0x632be59bd9b4e019ULL;
  auto fold = [&h](std::string_view s) {
    h ^= std::hash<std::string_view>{}(s) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
  };
  fold(p->slot(kUid));
  for (uint32_t i = kLabels; i < count_; ++i)
    fold(p->slot(i));
  return h;
}

// A packed record's data: the plain prefix (slots before kRaw), the codec's address, the packed
// tail.
const RecordCodec* Record::codec() const {
  const RecordCodec* c = nullptr;
  std::memcpy(static_cast<void*>(&c), data() + offsets()[kRaw], kCodecRefBytes);
  return c;
}

std::string_view Record::packedTail() const {
  const char* start = data() + offsets()[kRaw] + kCodecRefBytes;
  const char* end = reinterpret_cast<const char*>(this) + bytes_;
  return {start, static_cast<std::size_t>(end - start)};
}

RecordPtr RecordPtr::make(const Projected& p, bool keepRaw) {
  std::string key = p.key();
  std::string labels;
  if (p.hasLabels)
    for (const auto& [k, v] : p.labels) {
      labels.append(k).push_back('\0');
      labels.append(v).push_back('\0');
    }
  const uint32_t count = Record::kFirstField + static_cast<uint32_t>(p.values.size());
  std::size_t payload = key.size() + p.uid.size() + p.resourceVersion.size() + labels.size() +
                        (keepRaw ? p.raw.size() : 0);
  for (const auto& v : p.values)
    payload += v.size();
  payload += count; // a NUL after every slot
  std::size_t total = sizeof(Record) + sizeof(uint32_t) * (count + 1) + payload;
  void* mem = ::operator new(total);
  auto* r = new (mem) Record();
  r->count_ = count;
  r->bytes_ = static_cast<uint32_t>(total);
  r->hasLabels_ = p.hasLabels;
  uint32_t* off = r->offsets();
  char* out = const_cast<char*>(r->data());
  uint32_t pos = 0;
  auto put = [&](uint32_t i, std::string_view s) {
    off[i] = pos;
    if (!s.empty()) std::memcpy(out + pos, s.data(), s.size());
    pos += static_cast<uint32_t>(s.size());
    out[pos++] = '\0';
  };
  put(Record::kKey, key);
  put(Record::kUid, p.uid);
  put(Record::kResourceVersion, p.resourceVersion);
  put(Record::kLabels, labels);
  put(Record::kRaw, keepRaw ? std::string_view(p.raw) : std::string_view());
  for (std::size_t i = 0; i < p.values.size(); ++i)
    put(Record::kFirstField + static_cast<uint32_t>(i), p.values[i]);
  off[count] = pos;
  RecordPtr ptr;
  ptr.r_ = r;
  return ptr;
}

RecordPtr RecordPtr::withPrefixOf(const Record& r, std::size_t rest, bool packed) {
  const uint32_t* off = r.offsets();
  const std::size_t total =
      sizeof(Record) + sizeof(uint32_t) * (r.count_ + 1) + off[Record::kRaw] + rest;
  void* mem = ::operator new(total);
  auto* out = new (mem) Record();
  out->count_ = r.count_;
  out->bytes_ = static_cast<uint32_t>(total);
  out->hasLabels_ = r.hasLabels_;
  out->packed_ = packed;
  std::memcpy(out->offsets(), off, sizeof(uint32_t) * (r.count_ + 1));
  std::memcpy(const_cast<char*>(out->data()), r.data(), off[Record::kRaw]);
  RecordPtr ptr;
  ptr.r_ = out;
  return ptr;
}

RecordPtr RecordPtr::plain(const Record& r) {
  if (!r.packed_) {
    RecordPtr self;
    self.r_ = const_cast<Record*>(&r);
    self.retain();
    return self;
  }
  RecordPtr ptr = withPrefixOf(r, r.tailSize(), false);
  char* tail = const_cast<char*>(ptr->data()) + r.offsets()[Record::kRaw];
  // A packed tail that does not unpack is memory corruption: nothing sensible can follow.
  if (!r.codec()->decompress(r.packedTail(), tail, r.tailSize())) std::abort();
  return ptr;
}

RecordPtr RecordPtr::packed(const RecordCodec& codec, std::size_t minTail) const {
  const Record& r = *r_;
  if (r.packed_ || r.tailSize() < minTail) return *this;
  const uint32_t* off = r.offsets();
  std::string tail = codec.compress({r.data() + off[Record::kRaw], r.tailSize()});
  if (tail.empty() || tail.size() + kCodecRefBytes > r.tailSize() * 3 / 4) return *this;
  RecordPtr ptr = withPrefixOf(r, kCodecRefBytes + tail.size(), true);
  char* out = const_cast<char*>(ptr->data()) + off[Record::kRaw];
  const RecordCodec* c = &codec;
  std::memcpy(out, static_cast<const void*>(&c), kCodecRefBytes);
  std::memcpy(out + kCodecRefBytes, tail.data(), tail.size());
  return ptr;
}

void RecordPtr::release() {
  if (r_ != nullptr && r_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    r_->~Record();
    ::operator delete(static_cast<void*>(r_));
  }
  r_ = nullptr;
}

RecordPtr ObjectCache::put(RecordPtr record) {
  std::string_view key = record->key();
  count(*record, true);
  auto it = map_.find(key);
  if (it == map_.end()) {
    map_.emplace(key, std::move(record));
    return {};
  }
  // The index key views the old record: re-key the node to the new one.
  auto node = map_.extract(it);
  RecordPtr old = std::move(node.mapped());
  count(*old, false);
  node.key() = record->key();
  node.mapped() = std::move(record);
  map_.insert(std::move(node));
  return old;
}

RecordPtr ObjectCache::erase(std::string_view key) {
  auto it = map_.find(key);
  if (it == map_.end()) return {};
  RecordPtr old = std::move(it->second);
  map_.erase(it);
  count(*old, false);
  return old;
}

bool ObjectCache::swapIfSame(const RecordPtr& current, RecordPtr next) {
  auto it = map_.find(current->key());
  if (it == map_.end() || &*it->second != &*current) return false;
  // The index key views the record: re-key the node to the new one, as put() does.
  auto node = map_.extract(it);
  count(*node.mapped(), false);
  count(*next, true);
  node.key() = next->key();
  node.mapped() = std::move(next);
  map_.insert(std::move(node));
  return true;
}

RecordPtr ObjectCache::get(std::string_view key) const {
  auto it = map_.find(key);
  return it == map_.end() ? RecordPtr() : it->second;
}

} // namespace kuscia_host::kube
