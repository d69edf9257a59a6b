// What an informer keeps of a forgotten object: its key's 64-bit hash and the digest of what
// subscribers declared (Record::digest), in one open-addressing table of 16-byte slots (linear
// probing, deletion by backward shift, at most 7/8 full). A std::unordered_map of the same pairs
// costs about 40 bytes an entry (a node each and the bucket array); at 100,000 finished tasks the
// difference is 2 MiB of a host's peak. Not thread-safe; the informer's strand owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace kuscia_host::kube {

class DigestTable {
public:
  std::optional<uint64_t> find(uint64_t key) const;
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
  struct Slot {
    uint64_t key = 0; // 0: empty (a key hash of 0 is stored as 1)
    uint64_t digest = 0;
  };
  static uint64_t stored(uint64_t key) { return key == 0 ? 1 : key; }
  std::size_t home(uint64_t key) const;
  std::size_t next(std::size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void grow();

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  unsigned shift_ = 64;
};

} // namespace kuscia_host::kube
