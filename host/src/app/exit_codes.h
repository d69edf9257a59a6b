// The exit codes of kuscia-host's commands (kuscia-host(1), EXIT STATUS).
#pragma once

namespace kuscia_host {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1; // the command ran and failed
inline constexpr int kExitUsage = 2;   // bad command line or bad config

} // namespace kuscia_host
