// The host's YAML config file, whatever an operator (or a ConfigMap) puts in it. It loads or it
// gives errors, each naming the file; never both, never neither.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "fuzz_support.h"

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  kuscia_host::ConfigLoadOptions options;
  options.extraPluginDirs = {KH_FUZZ_PLUGIN_DIR};
  auto r = kuscia_host::parseHostConfig(text, "fuzz.yaml", options);
  if (r.config.has_value() == !r.errors.empty())
    kh_fuzz::fail("a config must load or give errors, not " +
                  std::string(r.config ? "both" : "neither"));
  for (const auto& e : r.errors)
    if (e.str().find("fuzz.yaml") == std::string::npos)
      kh_fuzz::fail("an error that does not name the file: " + e.str());
  return 0;
}
