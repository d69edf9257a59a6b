#include "kube/digest_table.h"

namespace kuscia_host::kube {

std::optional<uint64_t> DigestTable::find(uint64_t key) const {
  if (size_ == 0) return std::nullopt;
  key = stored(key);
  for (std::size_t i = home(key);; i = next(i)) {
    if (slots_[i].key == key) return slots_[i].digest;
    if (slots_[i].key == 0) return std::nullopt;
  }
}

void DigestTable::put(uint64_t key, uint64_t digest) {
  key = stored(key);
  if ((size_ + 1) * 8 > slots_.size() * 7) grow();
  std::size_t i = home(key);
  while (slots_[i].key != 0 && slots_[i].key != key)
    i = next(i);
  if (slots_[i].key == 0) ++size_;
  slots_[i] = {key, digest};
}

bool DigestTable::erase(uint64_t key) {
  if (size_ == 0) return false;
  key = stored(key);
  std::size_t i = home(key);
  while (slots_[i].key != key) {
    if (slots_[i].key == 0) return false;
    i = next(i);
  }
  // Backward shift: pull later slots of the run into the hole when their home allows it.
  std::size_t hole = i;
  for (std::size_t j = next(hole); slots_[j].key != 0; j = next(j)) {
    std::size_t h = home(slots_[j].key);
    // Movable when the hole lies cyclically within [h, j).
    bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
    if (movable) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = Slot{};
  --size_;
  return true;
}

void DigestTable::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  std::size_t capacity = old.empty() ? 64 : old.size() * 2;
  slots_.assign(capacity, Slot{});
  shift_ = 64;
  for (std::size_t c = capacity; c > 1; c >>= 1)
    --shift_;
  size_ = 0;
  for (const Slot& s : old)
    if (s.key != 0) put(s.key, s.digest);
}

} // namespace kuscia_host::kube
