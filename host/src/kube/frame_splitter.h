// Splits a watch stream into its JSON values. The stream is a sequence of JSON objects, usually
// one per line, but chunk boundaries are arbitrary: a chunk may hold half an event or several.
// The splitter keeps its scanning state between feeds, so every byte is looked at once. Where SSE2
// is there (every x86-64), 64 bytes are classified at a time: quotes and brackets become bit
// masks, the bytes inside strings a prefix XOR of the quotes; a block holding a backslash goes
// byte by byte, an escaped quote being one after an odd run of backslashes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kuscia_host::kube {

class FrameSplitter {
public:
  enum class Status { kFrame, kNeedMore, kError };

  explicit FrameSplitter(std::size_t maxFrameBytes = std::size_t{64} << 20);

  // Appends received bytes.
  void feed(std::string_view bytes);
  // Extracts the next complete top-level JSON object into `frame` (valid until the next feed or
  // next call). kError: the stream is not a sequence of objects (error() says why); the caller
  // drops the stream, the splitter must be reset() before reuse.
  Status next(std::string_view& frame);
  void reset();
  const std::string& error() const { return error_; }
  std::size_t buffered() const { return buf_.size() - start_; }

  // Bytes readable past the end of the last returned frame (the parser's padding needs this).
  std::size_t capacityAfter(std::string_view frame) const {
    return buf_.capacity() - static_cast<std::size_t>(frame.data() + frame.size() - buf_.data());
  }

private:
  std::string buf_;
  std::size_t start_ = 0; // first byte not yet returned
  std::size_t scan_ = 0;  // next byte to look at
  std::size_t frameStart_ = 0;
  int depth_ = 0;
  bool inString_ = false;
  std::size_t maxFrame_;
  std::string error_;
};

} // namespace kuscia_host::kube
