#include "kube/object_cache.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>

#include "kube/linear_probing.h"
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
  std::memcpy(static_cast<void*>(&c), data() + offset(kRaw), kCodecRefBytes);
  return c;
}

std::string_view Record::packedTail() const {
  const char* start = data() + offset(kRaw) + kCodecRefBytes;
  const char* end = reinterpret_cast<const char*>(this) + bytes_;
  return {start, static_cast<std::size_t>(end - start)};
}

namespace {

constexpr std::size_t kUuidText = 36;
constexpr std::size_t kUuidBytes = 16;

// The value of each lower-case hex digit, -1 for any other byte (upper case is not canonical:
// such a uid is kept as text).
constexpr std::array<int16_t, 256> kHexValue = [] {
  std::array<int16_t, 256> t{};
  t.fill(-1);
  for (int c = '0'; c <= '9'; ++c)
    t[c] = static_cast<int16_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c)
    t[c] = static_cast<int16_t>(c - 'a' + 10);
  return t;
}();

// Where each of the 16 bytes' two digits start in the text.
constexpr std::array<uint8_t, kUuidBytes> kDigitsAt = {0,  2,  4,  6,  9,  11, 14, 16,
                                                       19, 21, 24, 26, 28, 30, 32, 34};

// The 16 bytes of a canonical (lower-case, 8-4-4-4-12) UUID; false for any other text.
bool packUuid(std::string_view text, unsigned char* out) {
  if (text.size() != kUuidText || text[8] != '-' || text[13] != '-' || text[18] != '-' ||
      text[23] != '-')
    return false;
  int bad = 0;
  for (std::size_t b = 0; b < kUuidBytes; ++b) {
    const int high = kHexValue[static_cast<unsigned char>(text[kDigitsAt[b]])];
    const int low = kHexValue[static_cast<unsigned char>(text[kDigitsAt[b] + 1])];
    bad |= high | low; // negative when either is not a digit
    out[b] = static_cast<unsigned char>((high << 4) | (low & 0xF));
  }
  return bad >= 0;
}

} // namespace

void Record::uidInto(std::string& out) const {
  std::string_view stored = slot(kUid);
  if (!binaryUid_) {
    out.assign(stored);
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  // Written in a local buffer, then copied once: every event of every subscriber renders its UID,
  // and stores through the string's own pointer were reloaded after each character.
  char text[kUuidText];
  std::memset(text, '-', sizeof text);
  for (std::size_t b = 0; b < kUuidBytes; ++b) {
    const auto v = static_cast<unsigned char>(stored[b]);
    text[kDigitsAt[b]] = kHex[v >> 4];
    text[kDigitsAt[b] + 1] = kHex[v & 0xF];
  }
  out.assign(text, sizeof text);
}

RecordPtr RecordPtr::make(const Projected& p, bool keepRaw) {
  std::string key = p.key();
  std::string labels;
  if (p.hasLabels)
    for (const auto& [k, v] : p.labels) {
      labels.append(k).push_back('\0');
      labels.append(v).push_back('\0');
    }
  const std::size_t count = Record::kFirstField + p.values.size();
  if (count > UINT16_MAX) throw std::length_error("a record of more than 65535 slots");
  unsigned char uid[kUuidBytes];
  const bool binaryUid = packUuid(p.uid, uid);
  const std::string_view uidSlot =
      binaryUid ? std::string_view(reinterpret_cast<const char*>(uid), kUuidBytes) : p.uid;
  std::size_t payload = key.size() + uidSlot.size() + p.resourceVersion.size() + labels.size() +
                        (keepRaw ? p.raw.size() : 0);
  for (const auto& v : p.values)
    payload += v.size();
  payload += count; // a NUL after every slot
  const bool wide = payload > UINT16_MAX;
  const std::size_t offsetBytes = (count + 1) * (wide ? sizeof(uint32_t) : sizeof(uint16_t));
  const std::size_t total = sizeof(Record) + offsetBytes + payload;
  if (total > UINT32_MAX) throw std::length_error("a record of 4 GiB or more");
  void* mem = ::operator new(total);
  auto* r = new (mem) Record();
  r->count_ = static_cast<uint16_t>(count);
  r->bytes_ = static_cast<uint32_t>(total);
  r->hasLabels_ = p.hasLabels;
  r->wide_ = wide;
  r->binaryUid_ = binaryUid;
  auto* off = reinterpret_cast<unsigned char*>(r + 1);
  char* out = r->data();
  uint32_t pos = 0;
  auto mark = [&](std::size_t i) {
    if (wide)
      std::memcpy(off + i * sizeof(uint32_t), &pos, sizeof(uint32_t));
    else {
      const auto narrow = static_cast<uint16_t>(pos);
      std::memcpy(off + i * sizeof(uint16_t), &narrow, sizeof(uint16_t));
    }
  };
  auto put = [&](std::size_t i, std::string_view s) {
    mark(i);
    if (!s.empty()) std::memcpy(out + pos, s.data(), s.size());
    pos += static_cast<uint32_t>(s.size());
    out[pos++] = '\0';
  };
  put(Record::kKey, key);
  put(Record::kUid, uidSlot);
  put(Record::kResourceVersion, p.resourceVersion);
  put(Record::kLabels, labels);
  put(Record::kRaw, keepRaw ? std::string_view(p.raw) : std::string_view());
  for (std::size_t i = 0; i < p.values.size(); ++i)
    put(Record::kFirstField + i, p.values[i]);
  mark(count);
  RecordPtr ptr;
  ptr.r_ = r;
  return ptr;
}

RecordPtr RecordPtr::withPrefixOf(const Record& r, std::size_t rest, bool packed) {
  const std::size_t prefix = r.offsetBytes() + r.offset(Record::kRaw);
  const std::size_t total = sizeof(Record) + prefix + rest;
  void* mem = ::operator new(total);
  auto* out = new (mem) Record();
  out->count_ = r.count_;
  out->bytes_ = static_cast<uint32_t>(total);
  out->hasLabels_ = r.hasLabels_;
  out->wide_ = r.wide_;
  out->binaryUid_ = r.binaryUid_;
  out->packed_ = packed;
  // The offsets and the plain slots, which follow them.
  std::memcpy(static_cast<void*>(out + 1), static_cast<const void*>(&r + 1), prefix);
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
  char* tail = ptr.r_->data() + r.offset(Record::kRaw);
  // A packed tail that does not unpack is memory corruption: nothing sensible can follow.
  if (!r.codec()->decompress(r.packedTail(), tail, r.tailSize())) std::abort();
  return ptr;
}

RecordPtr RecordPtr::packed(const RecordCodec& codec, std::size_t minTail) const {
  const Record& r = *r_;
  if (r.packed_ || r.tailSize() < minTail) return *this;
  const uint32_t raw = r.offset(Record::kRaw);
  std::string tail = codec.compress({r.data() + raw, r.tailSize()});
  if (tail.empty() || tail.size() + kCodecRefBytes > r.tailSize() * 3 / 4) return *this;
  RecordPtr ptr = withPrefixOf(r, kCodecRefBytes + tail.size(), true);
  char* out = ptr.r_->data() + raw;
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

std::size_t ObjectCache::find(std::string_view key, uint32_t hash) const {
  if (size_ == 0) return kAbsent;
  for (std::size_t i = probing::home(hash, shift_);; i = following(i)) {
    if (hashes_[i] == 0) return kAbsent;
    if (hashes_[i] == hash && slots_[i]->key() == key) return i;
  }
}

void ObjectCache::rehash(std::size_t capacity) {
  std::vector<RecordPtr> oldSlots;
  std::vector<uint32_t> oldHashes;
  oldSlots.swap(slots_);
  oldHashes.swap(hashes_);
  slots_.resize(capacity);
  hashes_.assign(capacity, 0);
  shift_ = probing::shiftFor(capacity);
  for (std::size_t k = 0; k < oldSlots.size(); ++k)
    if (oldHashes[k] != 0) place(oldHashes[k], std::move(oldSlots[k]));
}

void ObjectCache::place(uint32_t hash, RecordPtr record) {
  std::size_t i = probing::home(hash, shift_);
  while (hashes_[i] != 0)
    i = following(i);
  hashes_[i] = hash;
  slots_[i] = std::move(record);
}

void ObjectCache::reserve(std::size_t n) {
  std::size_t capacity = 64;
  while (probing::tooFull(n, capacity))
    capacity *= 2;
  if (capacity > slots_.size()) rehash(capacity);
}

RecordPtr ObjectCache::put(RecordPtr record) {
  count(*record, true);
  const uint32_t h = hashOf(record->key());
  if (std::size_t i = find(record->key(), h); i != kAbsent) {
    RecordPtr old = std::exchange(slots_[i], std::move(record));
    count(*old, false);
    return old;
  }
  if (probing::tooFull(size_ + 1, slots_.size())) rehash(slots_.empty() ? 64 : slots_.size() * 2);
  place(h, std::move(record));
  ++size_;
  return {};
}

RecordPtr ObjectCache::erase(std::string_view key) {
  const std::size_t at = find(key, hashOf(key));
  if (at == kAbsent) return {};
  RecordPtr old = std::move(slots_[at]);
  count(*old, false);
  probing::eraseAt(
      at, slots_.size(), [this](std::size_t j) { return hashes_[j] != 0; },
      [this](std::size_t j) { return probing::home(hashes_[j], shift_); },
      [this](std::size_t from, std::size_t to) {
        slots_[to] = std::move(slots_[from]);
        hashes_[to] = hashes_[from];
      },
      [this](std::size_t j) {
        slots_[j] = RecordPtr();
        hashes_[j] = 0;
      });
  --size_;
  return old;
}

bool ObjectCache::swapIfSame(const RecordPtr& current, RecordPtr next) {
  const std::size_t at = find(current->key(), hashOf(current->key()));
  if (at == kAbsent || &*slots_[at] != &*current) return false;
  count(*slots_[at], false);
  count(*next, true);
  slots_[at] = std::move(next);
  return true;
}

RecordPtr ObjectCache::get(std::string_view key) const {
  const std::size_t at = find(key, hashOf(key));
  return at == kAbsent ? RecordPtr() : slots_[at];
}

} // namespace kuscia_host::kube
