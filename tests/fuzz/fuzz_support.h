// Shared by the fuzz harnesses: a failure that libFuzzer records as a crash with its input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kh_fuzz {

// An invariant broke: report it and abort, so that libFuzzer saves the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "invariant broken: %s\n", what.c_str());
  std::abort();
}

} // namespace kh_fuzz
