#include "kube/digest_table.h"

#include "kube/linear_probing.h"

namespace kuscia_host::kube {

uint64_t DigestTable::stored(uint64_t key) {
  // The high bits of a multiplication mix every bit of the key into the 48 kept (keys that
  // differ only in bits above them, or small keys, still differ).
  uint64_t k = (key * 0xd6e8feb86659fd93ULL) >> 16;
  return k == 0 ? 1 : k;
}

std::size_t DigestTable::home(uint64_t storedKey) const {
  return probing::home(storedKey, shift_);
}

std::size_t DigestTable::slotOf(uint64_t storedKey) const {
  std::size_t i = home(storedKey);
  while (slots_[i].key() != 0 && slots_[i].key() != storedKey)
    i = next(i);
  return i;
}

std::optional<uint64_t> DigestTable::find(uint64_t key) const {
  if (size_ == 0) return std::nullopt;
  const Slot& s = slots_[slotOf(stored(key))];
  if (s.key() == 0) return std::nullopt;
  return s.digest();
}

void DigestTable::put(uint64_t key, uint64_t digest) {
  if (probing::tooFull(size_ + 1, slots_.size())) grow();
  const uint64_t k = stored(key);
  Slot& s = slots_[slotOf(k)];
  if (s.key() == 0) ++size_;
  s.keyLow = static_cast<uint32_t>(k);
  s.keyHigh = static_cast<uint16_t>(k >> 32);
  s.digestLow = static_cast<uint32_t>(digest);
  s.digestHigh = static_cast<uint16_t>(digest >> 32);
}

bool DigestTable::erase(uint64_t key) {
  if (size_ == 0) return false;
  std::size_t i = slotOf(stored(key));
  if (slots_[i].key() == 0) return false;
  probing::eraseAt(
      i, slots_.size(), [this](std::size_t j) { return slots_[j].key() != 0; },
      [this](std::size_t j) { return home(slots_[j].key()); },
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
  for (const Slot& s : old)
    if (s.key() != 0) slots_[slotOf(s.key())] = s;
}

} // namespace kuscia_host::kube
