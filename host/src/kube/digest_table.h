// What an informer keeps of a forgotten object: its key's hash and the digest of what
// subscribers declared (Record::digest), in one open-addressing table of 12-byte slots (linear
// probing, deletion by backward shift, at most 7/8 full). A slot keeps 48 bits of each. A
// std::unordered_map of the full pairs costs about 40 bytes an entry, 16-byte slots 2 MiB at
// 100,000 finished tasks; these cost 1.5 MiB there.
//
// What the 48 bits cost: two keys whose hashes share them (about one pair in 50,000 tables of
// 100,000 objects) are one entry, so the one put first looks changed at its next event and is
// delivered again, which is safe (its subscribers look at it and release it again); a change
// whose digest keeps the same 48 bits (one in 2.8e14) stays forgotten until the next change.
//
// Not thread-safe; the informer's strand owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace kuscia_host::kube {

class DigestTable {
public:
  // What `key`'s entry keeps of its digest (nullopt: no entry); same() compares it.
  std::optional<uint64_t> find(uint64_t key) const;
  static bool same(uint64_t kept, uint64_t digest) { return kept == (digest & kMask); }
  void put(uint64_t key, uint64_t digest);
  bool erase(uint64_t key);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() {
    slots_.clear();
    size_ = 0;
  }
  void swap(DigestTable& other) noexcept {
    slots_.swap(other.slots_);
    std::swap(size_, other.size_);
    std::swap(shift_, other.shift_);
  }
  // Bytes held (the slots).
  std::size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

private:
  static constexpr uint64_t kMask = (uint64_t{1} << 48) - 1;
  // 48 bits of the key's hash (never 0: 0 is an empty slot) and of the digest, in 32-bit words.
  struct Slot {
    uint32_t keyLow = 0, digestLow = 0;
    uint16_t keyHigh = 0, digestHigh = 0;
    uint64_t key() const { return keyLow | (uint64_t{keyHigh} << 32); }
    uint64_t digest() const { return digestLow | (uint64_t{digestHigh} << 32); }
  };
  static_assert(sizeof(Slot) == 12);
  static uint64_t stored(uint64_t key);
  std::size_t home(uint64_t storedKey) const;
  std::size_t next(std::size_t i) const { return (i + 1) & (slots_.size() - 1); }
  // The slot holding `storedKey`, else the empty slot ending its run.
  std::size_t slotOf(uint64_t storedKey) const;
  void grow();

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  unsigned shift_ = 64;
};

} // namespace kuscia_host::kube
