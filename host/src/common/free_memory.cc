#include "common/free_memory.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstddef>

namespace kuscia_host {

namespace {

// jemalloc's control interface, found in the process at run time: the host libraries do not
// link jemalloc (the executable does), and a build without it falls back to glibc.
using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

Mallctl findMallctl() {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): dlsym answers a void*
  return reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
}

} // namespace

void returnFreeMemory() {
  static const Mallctl mallctl = findMallctl();
  if (mallctl != nullptr) {
    // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty pages returned.
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
    return;
  }
  malloc_trim(0);
}

} // namespace kuscia_host
