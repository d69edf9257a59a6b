// Splits a watch stream into its JSON values. The stream is a sequence of JSON objects, usually
// one per line, but chunk boundaries are arbitrary: a chunk may hold half an event or several.
//
// Lines first: an API server ends every event with a newline (and JSON has no raw newline inside
// a string), so a frame whose newline has arrived is offered as the whole line, found by memchr,
// without looking at its brackets (guessed()). The caller parses it anyway; when it is not exactly
// one JSON object (a pretty-printed event, two on one line, garbage), the caller says reject() and
// the splitter scans that frame bracket by bracket as below, so the frames a caller accepts are
// always those of the bracket scan, whatever the chunking.
//
// Brackets otherwise: the splitter keeps its scanning state between feeds, so every byte is
// looked at once. Where SSE2
// is there (every x86-64), 64 bytes are classified at a time: quotes and brackets become bit
// masks, the bytes inside strings a prefix XOR of the quotes; a block holding a backslash goes
// byte by byte, an escaped quote being one after an odd run of backslashes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kuscia_host::kube {

class FrameSplitter {
public:
  enum class Status { kFrame, kNeedMore, kError };

  // lines: offer whole lines first (above); false scans every frame's brackets.
  explicit FrameSplitter(std::size_t maxFrameBytes = std::size_t{64} << 20, bool lines = true);

  // Appends received bytes.
  void feed(std::string_view bytes);
  // Extracts the next complete top-level JSON object into `frame` (valid until the next feed or
  // next call). kError: the stream is not a sequence of objects (error() says why); the caller
  // drops the stream, the splitter must be reset() before reuse.
  Status next(std::string_view& frame);
  void reset();
  // Whether the frame next() just returned is a whole line taken without a bracket scan.
  bool guessed() const { return guessed_; }
  // The guessed frame is not one JSON object: scan it by its brackets instead. Only right after
  // next() returned a guessed frame, before any feed().
  void reject();
  const std::string& error() const { return error_; }
  std::size_t buffered() const { return buf_.size() - start_; }

  // Bytes readable past the end of the last returned frame (the parser's padding needs this).
  std::size_t capacityAfter(std::string_view frame) const {
    return buf_.capacity() - static_cast<std::size_t>(frame.data() + frame.size() - buf_.data());
  }

private:
  // Offers the line that ends the frame being read (from frameStart_), searching from `from`.
  bool guessLine(std::size_t from, std::string_view& frame);
  // next()'s steps. At depth 0: skips whitespace to a frame's '{' (nullopt: scan on).
  std::optional<Status> startFrame(const char* p, std::size_t& i, std::string_view& frame);
  // A block of bytes at a time while none is a backslash (SSE2); true with a frame.
  bool scanBlocks(const char* p, std::size_t n, std::size_t& i, std::size_t& scalarUntil,
                  std::string_view& frame);
  // One byte, or a string to its closing quote; true with a frame.
  bool scanByte(const char* p, std::size_t n, std::size_t& i, std::string_view& frame);
  // The frame ends at `end`: it is returned, the next one starts there.
  bool endFrame(const char* p, std::size_t end, std::string_view& frame);

  struct Resume {
    std::size_t start = 0, scan = 0;
    int depth = 0;
    bool inString = false;
  };
  std::string buf_;
  std::size_t start_ = 0; // first byte not yet returned
  std::size_t scan_ = 0;  // next byte to look at
  std::size_t frameStart_ = 0;
  int depth_ = 0;
  bool inString_ = false;
  std::size_t maxFrame_;
  bool lines_;
  bool guessed_ = false;
  bool slowFrame_ = false; // a guess of this frame was rejected: brackets until it ends
  Resume resume_;          // where a rejected guess continues
  std::string error_;
};

} // namespace kuscia_host::kube
