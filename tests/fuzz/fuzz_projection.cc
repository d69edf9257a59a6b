// Bytes from the network: one watch event and one LIST page through the simdjson projection
// decoder (the watch hot path), with the pointers the bundled plugins declare, with and without
// room for simdjson's padding after the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "kube/projection.h"

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace kuscia_host::kube;
  static auto* paths = [] {
    auto* p = new FieldPaths();
    for (const char* ptr : kh_fuzz::kPointers)
      (void)p->add(ptr);
    return p;
  }();
  static Decoder withLabels(*paths, {true, true});
  static Decoder plain(*paths, {false, false});
  // The decoder reads up to 64 bytes past the end when it may (simdjson's padding): give it room
  // in one case and none in the other.
  std::string padded(reinterpret_cast<const char*>(data), size);
  padded.reserve(size + 64);
  Projected out;
  (void)withLabels.decodeEvent(padded, padded.capacity(), out);
  std::string exact(reinterpret_cast<const char*>(data), size);
  (void)plain.decodeEvent(exact, exact.size(), out);
  std::size_t items = 0, bad = 0;
  (void)plain.decodeList(
      exact, [&](Projected&) { ++items; }, [&](const std::string&) { ++bad; });
  return 0;
}
