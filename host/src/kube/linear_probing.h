// The parts of an open-addressing table with linear probing that DigestTable and ObjectCache's
// index share: where a hash's run starts, and deletion by backward shift (no tombstones, so a
// table that sees many deletions does not fill up with them).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kuscia_host::kube::probing {

// The right shift that maps a 64-bit hash onto `capacity` slots (a power of two).
inline unsigned shiftFor(std::size_t capacity) {
  unsigned shift = 64;
  for (std::size_t c = capacity; c > 1; c >>= 1)
    --shift;
  return shift;
}

// Whether `n` entries would fill `capacity` slots more than 7/8: time to grow.
inline bool tooFull(std::size_t n, std::size_t capacity) {
  return n * 8 > capacity * 7;
}

// The slot a hash's run starts at (Fibonacci hashing: the high bits of a multiplication).
inline std::size_t home(uint64_t hash, unsigned shift) {
  return static_cast<std::size_t>((hash * 0x9e3779b97f4a7c15ULL) >> shift);
}

// Empties slot `hole` of a table of `capacity` slots, pulling later slots of the same run into it
// when their home allows it. occupied(j): whether slot j holds an entry; homeOf(j): its home;
// move(from, to): moves an entry; clear(j): empties a slot.
template <class Occupied, class HomeOf, class Move, class Clear>
void eraseAt(std::size_t hole, std::size_t capacity, Occupied occupied, HomeOf homeOf, Move move,
             Clear clear) {
  const std::size_t mask = capacity - 1;
  for (std::size_t j = (hole + 1) & mask; occupied(j); j = (j + 1) & mask) {
    const std::size_t h = homeOf(j);
    // Movable when the hole lies cyclically within [h, j).
    const bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
    if (movable) {
      move(j, hole);
      hole = j;
    }
  }
  clear(hole);
}

} // namespace kuscia_host::kube::probing
