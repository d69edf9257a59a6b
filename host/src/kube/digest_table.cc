#include "kube/digest_table.h"

#include "kube/linear_probing.h"

namespace kuscia_host::kube {

std::size_t DigestTable::home(uint64_t key) const {
  return probing::home(key, shift_);
}

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
  if (probing::tooFull(size_ + 1, slots_.size())) grow();
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
  probing::eraseAt(
      i, slots_.size(), [this](std::size_t j) { return slots_[j].key != 0; },
      [this](std::size_t j) { return home(slots_[j].key); },
      [this](std::size_t from, std::size_t to) { slots_[to] = slots_[from]; },
      [this](std::size_t j) { slots_[j] = Slot{}; });
  --size_;
  return true;
}

void DigestTable::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  std::size_t capacity = old.empty() ? 64 : old.size() * 2;
  slots_.assign(capacity, Slot{});
  shift_ = probing::shiftFor(capacity);
  size_ = 0;
  for (const Slot& s : old)
    if (s.key != 0) put(s.key, s.digest);
}

} // namespace kuscia_host::kube
