// Bytes from the network: a watch stream, split into frames and each frame decoded by the simdjson
// projection, as an informer does. The first byte picks the chunk size the stream arrives in;
// whatever the chunking, the frames (and the first error) must be those of the stream fed at once.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
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
};

Split split(std::string_view stream, std::size_t chunk,
            const std::function<void(FrameSplitter&, std::string_view)>& onFrame) {
  FrameSplitter splitter(1 << 16);
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
      out.frames.emplace_back(frame);
      if (onFrame) onFrame(splitter, frame);
    }
  }
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

  Split chunked = split(stream, chunk, [&](FrameSplitter& s, std::string_view frame) {
    (void)decoder.decodeEvent(frame, frame.size() + s.capacityAfter(frame), projected);
  });
  Split whole = split(stream, stream.size() + 1, nullptr);
  if (chunked.frames != whole.frames || chunked.failed != whole.failed) {
    kh_fuzz::fail("frames differ between chunk size " + std::to_string(chunk) +
                  " and the whole stream");
  }
  return 0;
}
