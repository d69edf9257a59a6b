// The embedded API server's patch code on client bytes: "<original>\0<patch>", the first byte
// picking merge (RFC 7386), JSON (RFC 6902) or strategic merge patch and the kind the strategic
// one merges lists for. A merge patch applied twice gives what it gives once (RFC 7386).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "apiserver/patch.h"
#include "fuzz_support.h"

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using nlohmann::json;
  using namespace kuscia_host::apiserver;
  if (size < 2) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto cut = in.find('\0');
  if (cut == std::string_view::npos) return 0;
  json original = json::parse(in.substr(0, cut), nullptr, false);
  json patch = json::parse(in.substr(cut + 1), nullptr, false);
  if (original.is_discarded() || patch.is_discarded()) return 0;
  static const char* kinds[] = {"Pod", "Service", "Endpoints", "KusciaTask"};
  switch (data[0] % 6) {
  case 0: {
    auto once = applyMergePatch(original, patch);
    if (!once) return 0;
    auto twice = applyMergePatch(*once, patch);
    if (!twice || *twice != *once) kh_fuzz::fail("a merge patch applied twice changed the result");
    (void)once->dump();
    break;
  }
  case 1:
    if (auto r = applyJsonPatch(original, patch)) (void)r->dump();
    break;
  default:
    if (auto r = applyStrategicMergePatch(original, patch, kinds[data[0] % 4])) (void)r->dump();
  }
  return 0;
}
