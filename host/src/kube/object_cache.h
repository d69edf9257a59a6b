// The informer's cache: one compact, immutable record per object holding only what subscribers
// asked for (key, uid, resourceVersion, labels when kept, the raw JSON of each declared field,
// the raw object when asked for) in a single allocation with an intrusive reference count. No
// DOM is retained. The index is keyed by a view into the record itself.
//
// A record is plain or packed. A packed record keeps key, uid, resourceVersion and labels as they
// are and its tail (the raw object and the fields) compressed by a RecordCodec: that is how a cold
// object (a finished task kept for a month) costs a tenth of its text. Fields and the raw object
// are read through plain(), which unpacks a copy only when the record is packed.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/projection.h"

namespace kuscia_host::kube {

class RecordCodec;
class RecordPtr;

class Record {
public:
  enum Slot : uint32_t { kKey, kUid, kResourceVersion, kLabels, kRaw, kFirstField };

  std::string_view key() const { return slot(kKey); }
  // The uid as the API server sent it (kept as 16 bytes when it is a canonical UUID).
  std::string uid() const {
    std::string out;
    uidInto(out);
    return out;
  }
  // The same written over `out`, whose capacity is kept (a plugin's events reuse their strings).
  void uidInto(std::string& out) const;
  std::string_view resourceVersion() const { return slot(kResourceVersion); }
  // The raw object and the fields: of plain records only (see plain()).
  std::string_view raw() const { return slot(kRaw); }
  // The raw JSON of declared field i, "" when it did not resolve.
  std::string_view field(std::size_t i) const { return slot(kFirstField + i); }
  std::size_t fieldCount() const { return count_ - kFirstField; }
  bool hasLabels() const { return hasLabels_; }
  // The value of a label, when labels are kept and the object has it.
  std::optional<std::string_view> label(std::string_view name) const;
  // Same state as `other` for the subscribers (every stored byte equal, packed or not)?
  bool sameContent(const Record& other) const;
  std::size_t bytes() const { return bytes_; }
  bool packed() const { return packed_; }
  // Bytes of the raw object and the fields as plain text (what packing works on).
  std::size_t tailSize() const { return offset(count_) - offset(kRaw); }
  // Marks the record as seen by a sweep; whether it had been seen before.
  bool markSeen() const { return seen_.exchange(true, std::memory_order_relaxed); }
  // Packing this record was tried and saved too little: a sweep does not try it again (it would
  // compress every such record every sweep for nothing). A change makes a new record.
  bool unpackable() const { return unpackable_.load(std::memory_order_relaxed); }
  void markUnpackable() const { unpackable_.store(true, std::memory_order_relaxed); }
  // The subscriptions (bits by their index in the informer) that released this version: they are
  // done with the object until it changes for them (kh_host_api_v1_t.cache_release).
  uint64_t released() const { return released_.load(std::memory_order_acquire); }
  // Adds `bits`; returns the mask after.
  uint64_t release(uint64_t bits) const {
    return released_.fetch_or(bits, std::memory_order_acq_rel) | bits;
  }
  // A 64-bit digest of everything a subscriber can see (uid, labels, the raw object, the
  // fields): equal digests mean no subscriber would see a change. Unpacks a packed record.
  uint64_t digest() const;

  // Every slot is followed by a NUL, so slot(i).data() is also a C string (the uid's slot holds
  // binary bytes when the uid is kept as 16 bytes: read it through uid()).
  std::string_view slot(uint32_t i) const {
    assert(!packed_ || i < kRaw);
    const uint32_t at = offset(i);
    return {data() + at, offset(i + 1) - at - 1};
  }

private:
  friend class RecordPtr;
  Record() = default;
  // Slot i starts at data() + offset(i); offset(count_) is the end of the last. The offsets are
  // 16 bits wide unless the data is 64 KiB or more (a raw object kept whole).
  uint32_t offset(uint32_t i) const {
    const auto* at = reinterpret_cast<const unsigned char*>(this + 1);
    if (wide_) {
      uint32_t v = 0;
      std::memcpy(&v, at + i * sizeof(uint32_t), sizeof v);
      return v;
    }
    uint16_t v = 0;
    std::memcpy(&v, at + i * sizeof(uint16_t), sizeof v);
    return v;
  }
  std::size_t offsetBytes() const {
    return (count_ + std::size_t{1}) * (wide_ ? sizeof(uint32_t) : sizeof(uint16_t));
  }
  const char* data() const { return reinterpret_cast<const char*>(this + 1) + offsetBytes(); }
  char* data() { return reinterpret_cast<char*>(this + 1) + offsetBytes(); }
  // Of a packed record: the codec that packed it and the packed tail.
  const RecordCodec* codec() const;
  std::string_view packedTail() const;

  std::atomic<uint32_t> refs_{1};
  uint32_t bytes_ = 0;
  uint16_t count_ = 0;
  bool hasLabels_ = false;
  bool packed_ = false;
  bool wide_ = false;                           // 32-bit offsets
  bool binaryUid_ = false;                      // the uid's slot holds a canonical UUID's 16 bytes
  mutable std::atomic<bool> seen_{false};       // not content: the sweep's note
  mutable std::atomic<bool> unpackable_{false}; // not content: see unpackable()
  mutable std::atomic<uint64_t> released_{0};   // not content: see released()
};

// A counted reference to an immutable Record (8 bytes).
class RecordPtr {
public:
  RecordPtr() = default;
  // Builds a record from a decoded object.
  static RecordPtr make(const Projected& p, bool keepRaw);
  // A plain record with the content of `r`: `r` itself when it is plain, else an unpacked copy.
  static RecordPtr plain(const Record& r);
  // The packed form of this (plain) record; this record itself when its tail is shorter than
  // `minTail`, or packing would not save a quarter of it.
  RecordPtr packed(const RecordCodec& codec, std::size_t minTail) const;
  RecordPtr(const RecordPtr& o) : r_(o.r_) { retain(); }
  RecordPtr(RecordPtr&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  RecordPtr& operator=(RecordPtr o) noexcept {
    std::swap(r_, o.r_);
    return *this;
  }
  ~RecordPtr() { release(); }
  const Record* operator->() const { return r_; }
  const Record& operator*() const { return *r_; }
  explicit operator bool() const { return r_ != nullptr; }

private:
  // A new record with r's header, offsets and plain prefix (the slots before kRaw), and `rest`
  // bytes of room after the prefix for the caller to fill.
  static RecordPtr withPrefixOf(const Record& r, std::size_t rest, bool packed);
  void retain() {
    if (r_ != nullptr) r_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  void release();
  Record* r_ = nullptr;
};

// A record to read fields from: the record itself when plain, else an unpacked copy kept for the
// view's life.
class PlainRecord {
public:
  explicit PlainRecord(const Record& r) : r_(&r) {
    if (r.packed()) {
      copy_ = RecordPtr::plain(r);
      r_ = &*copy_;
    }
  }
  const Record& operator*() const { return *r_; }
  const Record* operator->() const { return r_; }

private:
  const Record* r_;
  RecordPtr copy_;
};

// Key -> record. The index is an open-addressing table of the records themselves (8 bytes a
// slot, keyed by each record's own key) beside 32 bits of each key's hash (0: the slot is
// empty), linear probing, at most 7/8 full: 12 bytes a slot, about 18 an object, against about
// 60 for a node of a std::unordered_map and its bucket (at 10,000 running tasks, 190,000
// objects: 8 MiB of the host's peak). The kept hashes let growth and deletion move slots without
// reading the records (a growth of 200,000 records would otherwise read each one's key).
// Not thread-safe; the informer guards it.
class ObjectCache {
public:
  // Inserts or replaces; returns the previous record (empty if new).
  RecordPtr put(RecordPtr record);
  RecordPtr erase(std::string_view key);
  // Puts `next` in place of `current` (same key) if the cache still holds `current`.
  bool swapIfSame(const RecordPtr& current, RecordPtr next);
  RecordPtr get(std::string_view key) const;
  std::size_t size() const { return size_; }
  // Bytes held by records.
  std::size_t recordBytes() const { return bytes_; }
  // Bytes held by the index.
  std::size_t indexBytes() const {
    return slots_.capacity() * sizeof(RecordPtr) + hashes_.capacity() * sizeof(uint32_t);
  }
  // Records held packed.
  std::size_t packedCount() const { return packed_; }
  template <class Fn> void forEach(Fn&& fn) const {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (hashes_[i] != 0) fn(slots_[i]);
  }
  void swap(ObjectCache& other) noexcept {
    slots_.swap(other.slots_);
    hashes_.swap(other.hashes_);
    std::swap(size_, other.size_);
    std::swap(shift_, other.shift_);
    std::swap(bytes_, other.bytes_);
    std::swap(packed_, other.packed_);
  }
  void reserve(std::size_t n);

private:
  static constexpr std::size_t kAbsent = ~std::size_t{0};
  // The 32 bits of a key's hash the index keeps, never 0 (0: an empty slot).
  static uint32_t hashOf(std::string_view key) {
    return static_cast<uint32_t>(std::hash<std::string_view>{}(key) >> 32) | 1U;
  }
  std::size_t following(std::size_t i) const { return (i + 1) & (slots_.size() - 1); }
  // The slot holding `key` (of hash `hash`), or kAbsent.
  std::size_t find(std::string_view key, uint32_t hash) const;
  void rehash(std::size_t capacity);
  // Puts a record that is not in the index into the first free slot of its run.
  void place(uint32_t hash, RecordPtr record);
  void count(const Record& r, bool in) {
    std::size_t packed = r.packed() ? 1 : 0;
    if (in) {
      bytes_ += r.bytes();
      packed_ += packed;
    } else {
      bytes_ -= r.bytes();
      packed_ -= packed;
    }
  }
  std::vector<RecordPtr> slots_;
  std::vector<uint32_t> hashes_;
  std::size_t size_ = 0;
  unsigned shift_ = 64;
  std::size_t bytes_ = 0;
  std::size_t packed_ = 0;
};

} // namespace kuscia_host::kube
