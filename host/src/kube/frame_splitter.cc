#include "kube/frame_splitter.h"

#include <cstring>

namespace kuscia_host::kube {

namespace {
// Room kept past the data so the JSON parser may read a little beyond a frame's end.
constexpr std::size_t kPadding = 64;
} // namespace

FrameSplitter::FrameSplitter(std::size_t maxFrameBytes) : maxFrame_(maxFrameBytes) {}

void FrameSplitter::reset() {
  buf_.clear();
  start_ = scan_ = frameStart_ = 0;
  depth_ = 0;
  inString_ = escape_ = false;
  error_.clear();
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

FrameSplitter::Status FrameSplitter::next(std::string_view& frame) {
  if (!error_.empty()) return Status::kError;
  const char* p = buf_.data();
  const std::size_t n = buf_.size();
  std::size_t i = scan_;
  while (i < n) {
    if (depth_ == 0) {
      char c = p[i];
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        start_ = ++i;
        continue;
      }
      if (c != '{') {
        error_ =
            std::string("malformed watch stream: expected '{' at the start of an event, got '") +
            c + "'";
        scan_ = i;
        return Status::kError;
      }
      frameStart_ = i;
      depth_ = 1;
      ++i;
      continue;
    }
    if (inString_) {
      // Jump to the next quote or backslash.
      const char* q = static_cast<const char*>(std::memchr(p + i, '"', n - i));
      const char* b =
          static_cast<const char*>(std::memchr(p + i, '\\', q != nullptr ? q - (p + i) : n - i));
      if (escape_) {
        escape_ = false;
        ++i;
        continue;
      }
      if (b != nullptr) {
        i = static_cast<std::size_t>(b - p);
        if (i + 1 < n) {
          i += 2;
        } else {
          escape_ = true;
          i = n;
        }
        continue;
      }
      if (q == nullptr) {
        i = n;
        break;
      }
      i = static_cast<std::size_t>(q - p) + 1;
      inString_ = false;
      continue;
    }
    char c = p[i++];
    if (c == '"') {
      inString_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        frame = std::string_view(p + frameStart_, i - frameStart_);
        start_ = scan_ = i;
        return Status::kFrame;
      }
    }
  }
  scan_ = i;
  if (depth_ > 0 && scan_ - frameStart_ > maxFrame_) {
    error_ = "watch event larger than " + std::to_string(maxFrame_ >> 20) + " MiB";
    return Status::kError;
  }
  return Status::kNeedMore;
}

} // namespace kuscia_host::kube
