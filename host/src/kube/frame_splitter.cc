#include "kube/frame_splitter.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kuscia_host::kube {

namespace {
// Room kept past the data so the JSON parser may read a little beyond a frame's end.
constexpr std::size_t kPadding = 64;

// The index of the quote that closes the string being scanned from `i`, or `n` when it is not in
// p[i, n) yet. A quote is escaped when an odd number of backslashes precede it; the walk back
// stops at the string's opening quote at the latest (the frame being scanned stays buffered, so
// a backslash at the end of the previous feed is seen too). One search per string: most strings
// in an event are short keys and values, found by the short loop before memchr is worth calling.
std::size_t closingQuote(const char* p, std::size_t i, std::size_t n) {
  while (i < n) {
    const std::size_t shortEnd = std::min(n, i + 16);
    std::size_t q = i;
    while (q < shortEnd && p[q] != '"')
      ++q;
    if (q == shortEnd) {
      if (shortEnd == n) return n;
      const void* found = std::memchr(p + shortEnd, '"', n - shortEnd);
      if (found == nullptr) return n;
      q = static_cast<std::size_t>(static_cast<const char*>(found) - p);
    }
    std::size_t backslashes = 0;
    while (p[q - 1 - backslashes] == '\\')
      ++backslashes;
    if (backslashes % 2 == 0) return q;
    i = q + 1;
  }
  return n;
}

#if defined(__SSE2__)
// 64 bytes as bit masks (bit k: byte k): quotes, backslashes, opening and closing brackets.
constexpr std::size_t kBlock = 64;
struct Block {
  uint64_t quotes = 0, backslashes = 0, opens = 0, closes = 0;
};

// The set bits of x. Written out: without -mpopcnt (not in the x86-64 baseline) GCC makes
// __builtin_popcountll a call into libgcc.
int bitCount(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ULL;
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

Block classify(const char* p) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i lower = _mm_set1_epi8(0x20); // '[' | 0x20 == '{', ']' | 0x20 == '}'
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  Block b;
  const auto add = [&](std::size_t k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i folded = _mm_or_si128(v, lower);
    const auto bits = [k](__m128i m) {
      return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(m))) << (16 * k);
    };
    b.quotes |= bits(_mm_cmpeq_epi8(v, quote));
    b.backslashes |= bits(_mm_cmpeq_epi8(v, backslash));
    b.opens |= bits(_mm_cmpeq_epi8(folded, open));
    b.closes |= bits(_mm_cmpeq_epi8(folded, close));
  };
  add(0);
  add(1);
  add(2);
  add(3);
  return b;
}
#endif
} // namespace

FrameSplitter::FrameSplitter(std::size_t maxFrameBytes, bool lines)
    : maxFrame_(maxFrameBytes), lines_(lines) {}

void FrameSplitter::reset() {
  buf_.clear();
  start_ = scan_ = frameStart_ = 0;
  depth_ = 0;
  inString_ = false;
  guessed_ = slowFrame_ = false;
  error_.clear();
}

bool FrameSplitter::guessLine(std::size_t from, std::string_view& frame) {
  const char* p = buf_.data();
  const void* found = std::memchr(p + from, '\n', buf_.size() - from);
  if (found == nullptr) return false;
  const auto newline = static_cast<std::size_t>(static_cast<const char*>(found) - p);
  std::size_t end = newline;
  while (end > frameStart_ && (p[end - 1] == ' ' || p[end - 1] == '\r' || p[end - 1] == '\t'))
    --end;
  if (end - frameStart_ > maxFrame_) return false; // the bracket scan reports it
  resume_ = {start_, scan_, depth_, inString_};
  frame = std::string_view(p + frameStart_, end - frameStart_);
  start_ = scan_ = newline + 1;
  depth_ = 0;
  inString_ = false;
  guessed_ = true;
  return true;
}

void FrameSplitter::reject() {
  if (!guessed_) return;
  start_ = resume_.start;
  scan_ = resume_.scan;
  depth_ = resume_.depth;
  inString_ = resume_.inString;
  guessed_ = false;
  slowFrame_ = true;
}

void FrameSplitter::feed(std::string_view bytes) {
  // Drop what was already returned before growing; keep the in-progress frame.
  if (start_ > 0 && (start_ == buf_.size() || start_ > buf_.size() / 2)) {
    buf_.erase(0, start_);
    scan_ -= start_;
    frameStart_ -= std::min(frameStart_, start_);
    start_ = 0;
  }
  if (buf_.capacity() < buf_.size() + bytes.size() + kPadding)
    buf_.reserve(std::max(buf_.capacity() * 2, buf_.size() + bytes.size() + kPadding));
  buf_.append(bytes);
}

std::optional<FrameSplitter::Status> FrameSplitter::startFrame(const char* p, std::size_t& i,
                                                               std::string_view& frame) {
  char c = p[i];
  if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
    start_ = ++i;
    return std::nullopt;
  }
  if (c != '{') {
    error_ = std::string("malformed watch stream: expected '{' at the start of an event, got '") +
             c + "'";
    scan_ = i;
    return Status::kError;
  }
  frameStart_ = i;
  if (lines_ && !slowFrame_) {
    scan_ = i;
    if (guessLine(i, frame)) return Status::kFrame;
  }
  depth_ = 1;
  ++i;
  return std::nullopt;
}

bool FrameSplitter::endFrame(const char* p, std::size_t end, std::string_view& frame) {
  depth_ = 0;
  inString_ = false;
  frame = std::string_view(p + frameStart_, end - frameStart_);
  start_ = scan_ = end;
  slowFrame_ = false;
  return true;
}

#if defined(__SSE2__)
bool FrameSplitter::scanBlocks(const char* p, std::size_t n, std::size_t& i,
                               std::size_t& scalarUntil, std::string_view& frame) {
  // The fast loop keeps the state in registers; it leaves at a backslash (the block goes byte by
  // byte in next()), near the end of the data, or with a frame.
  int depth = depth_;
  uint64_t in = inString_ ? ~uint64_t{0} : 0; // all ones inside a string
  while (i + kBlock <= n) {
    if (p[i - 1] == '\\') break;
    const Block b = classify(p + i);
    if (b.backslashes != 0) {
      scalarUntil = i + kBlock;
      break;
    }
    // Bytes inside strings: a prefix XOR of the quotes (a quote opens or closes one).
    uint64_t inside = b.quotes;
    inside ^= inside << 1;
    inside ^= inside << 2;
    inside ^= inside << 4;
    inside ^= inside << 8;
    inside ^= inside << 16;
    inside ^= inside << 32;
    inside ^= in;
    const uint64_t opens = b.opens & ~inside;
    const uint64_t closes = b.closes & ~inside;
    const int closing = bitCount(closes);
    in = static_cast<uint64_t>(static_cast<int64_t>(inside) >> 63);
    if (depth > closing) {
      depth += bitCount(opens) - closing;
      i += kBlock;
      continue;
    }
    // The frame may end in this block: walk its brackets in order.
    uint64_t all = opens | closes;
    while (all != 0) {
      const int bit = __builtin_ctzll(all);
      all &= all - 1;
      if ((opens >> bit & 1) != 0) {
        ++depth;
      } else if (--depth == 0) {
        i += static_cast<std::size_t>(bit) + 1;
        return endFrame(p, i, frame);
      }
    }
    i += kBlock;
  }
  depth_ = depth;
  inString_ = in != 0;
  return false;
}
#endif

bool FrameSplitter::scanByte(const char* p, std::size_t n, std::size_t& i,
                             std::string_view& frame) {
  if (inString_) {
    std::size_t q = closingQuote(p, i, n);
    if (q == n) {
      i = n;
      return false;
    }
    i = q + 1;
    inString_ = false;
    return false;
  }
  switch (p[i++]) {
  case '"': inString_ = true; break;
  case '{':
  case '[': ++depth_; break;
  case '}':
  case ']':
    if (--depth_ == 0) return endFrame(p, i, frame);
    break;
  default: break;
  }
  return false;
}

FrameSplitter::Status FrameSplitter::next(std::string_view& frame) {
  if (!error_.empty()) return Status::kError;
  guessed_ = false;
  // A frame begun in an earlier feed: its line may have ended since.
  if (lines_ && depth_ > 0 && !slowFrame_ && guessLine(scan_, frame)) return Status::kFrame;
  const char* p = buf_.data();
  const std::size_t n = buf_.size();
  std::size_t i = scan_;
#if defined(__SSE2__)
  std::size_t scalarUntil = 0;
#endif
  while (i < n) {
    if (depth_ == 0) {
      if (auto status = startFrame(p, i, frame)) return *status;
      continue;
    }
#if defined(__SSE2__)
    if (i >= scalarUntil) {
      if (scanBlocks(p, n, i, scalarUntil, frame)) return Status::kFrame;
      if (i >= n) break;
    }
#endif
    if (scanByte(p, n, i, frame)) return Status::kFrame;
  }
  scan_ = i;
  if (depth_ > 0 && scan_ - frameStart_ > maxFrame_) {
    error_ = "watch event larger than " + std::to_string(maxFrame_ >> 20) + " MiB";
    return Status::kError;
  }
  return Status::kNeedMore;
}

} // namespace kuscia_host::kube
