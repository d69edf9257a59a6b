// A kubeconfig file as kubectl users write them. It loads or gives an error that names the file.
// No environment: $KUBECONFIG and $HOME are not read.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

#include "fuzz_support.h"
#include "kube/cluster_access.h"

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir != nullptr ? dir : "/tmp") + "/kh-fuzz-kubeconfig-" +
           std::to_string(::getpid());
  }();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto noEnv = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  auto r = kuscia_host::kube::loadKubeconfig(path, noEnv);
  if (!r && r.error().find(path) == std::string::npos)
    kh_fuzz::fail("an error that does not name the file: " + r.error());
  if (r) (void)r->bearerToken();
  return 0;
}
