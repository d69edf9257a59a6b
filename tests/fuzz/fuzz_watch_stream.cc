// Bytes from the network: a watch stream, split into frames and each frame decoded by the simdjson
// projection, as an informer does (a guessed line the decoder refuses is rejected and split by its
// brackets). The first byte picks the chunk size the stream arrives in. Whatever the chunking, the
// bracket scan gives the frames (and the first error) of the stream fed at once; and where that
// stream is valid JSON, lines give those frames too. (On corrupt JSON they may not: simdjson's
// On-Demand parser validates what it reads, not what it skips, so it may accept a corrupt line
// that the bracket scan would cut elsewhere, such as `{"a":\"}` whose backslash outside a string
// it skips, where the bracket scan opens a string and waits for more. Either way nothing crashes
// or reads out of bounds.)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "kube/frame_splitter.h"
#include "kube/projection.h"
#include "plugin_field_paths.h"

namespace {

using kuscia_host::kube::FrameSplitter;

struct Split {
  std::vector<std::string> frames;
  bool failed = false;
  bool pending = false; // the stream ended inside a frame
};

// onFrame: whether the frame is taken (false rejects a guessed line).
Split split(std::string_view stream, std::size_t chunk, bool lines,
            const std::function<bool(FrameSplitter&, std::string_view)>& onFrame) {
  FrameSplitter splitter(1 << 16, lines);
  Split out;
  for (std::size_t pos = 0; pos < stream.size() && !out.failed; pos += chunk) {
    splitter.feed(stream.substr(pos, chunk));
    std::string_view frame;
    for (;;) {
      auto status = splitter.next(frame);
      if (status == FrameSplitter::Status::kNeedMore) break;
      if (status == FrameSplitter::Status::kError) {
        out.failed = true;
        break;
      }
      if (onFrame && !onFrame(splitter, frame) && splitter.guessed()) {
        splitter.reject();
        continue;
      }
      out.frames.emplace_back(frame);
    }
  }
  out.pending = splitter.buffered() > 0;
  return out;
}

} // namespace

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::size_t chunk = 1 + data[0] % 64;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  static kuscia_host::kube::Decoder decoder(kh_fuzz::pluginFieldPaths(), {true, false});
  kuscia_host::kube::Projected projected;

  auto decode = [&](FrameSplitter& s, std::string_view frame) {
    return static_cast<bool>(
        decoder.decodeEvent(frame, frame.size() + s.capacityAfter(frame), projected));
  };
  Split whole = split(stream, stream.size() + 1, false, nullptr);
  Split chunked = split(stream, chunk, false, decode);
  if (chunked.frames != whole.frames || chunked.failed != whole.failed) {
    kh_fuzz::fail("frames differ between chunk size " + std::to_string(chunk) +
                  " and the whole stream");
  }
  Split lines = split(stream, chunk, true, decode);
  // Valid: every byte framed (an unfinished last frame is not JSON) and every frame JSON.
  bool valid = !whole.failed && !whole.pending;
  for (const auto& f : whole.frames)
    valid = valid && nlohmann::json::accept(f);
  if (valid && (lines.frames != whole.frames || lines.failed))
    kh_fuzz::fail("valid JSON split by lines in chunks of " + std::to_string(chunk) +
                  " differs from its bracket scan");
  return 0;
}
