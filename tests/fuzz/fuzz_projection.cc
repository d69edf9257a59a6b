// Bytes from the network: one watch event and one LIST page through the simdjson projection
// decoder (the watch hot path), with the pointers the bundled plugins declare, with and without
// room for simdjson's padding after the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kube/projection.h"
#include "plugin_field_paths.h"

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace kuscia_host::kube;
  static Decoder withLabels(kh_fuzz::pluginFieldPaths(), {true, true});
  static Decoder plain(kh_fuzz::pluginFieldPaths(), {false, false});
  // The decoder reads up to 64 bytes past the end when it may (simdjson's padding): give it room
  // in one case and none in the other.
  std::string padded(reinterpret_cast<const char*>(data), size);
  padded.reserve(size + 64);
  Projected out;
  (void)withLabels.decodeEvent(padded, padded.capacity(), out);
  std::string exact(reinterpret_cast<const char*>(data), size);
  (void)plain.decodeEvent(exact, exact.size(), out);
  (void)plain.decodeList(
      exact, [](Projected&) {}, [](const std::string&) {});
  return 0;
}
