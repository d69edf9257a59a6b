// The host's defaults, written once: the config's typed form (config/config.h), its schema and
// reference text (config/config.cc), the Kubernetes client's options (kube/kube_client.h) and
// the command line all take them from here.
#pragma once

namespace kuscia_host::defaults {

inline constexpr const char* kMode = "centralized";
inline constexpr const char* kLogLevel = "info";
inline constexpr const char* kLogFormat = "text";
inline constexpr const char* kAdminListen = "127.0.0.1:9464";
inline constexpr int kWorkerThreads = 1;
inline constexpr const char* kEmbeddedListen = "127.0.0.1:0";
inline constexpr int kQps = 50; // client-side rate limit for writes and lists, requests/s
inline constexpr int kBurst = 100;
// A watch stream is read at most once per this many milliseconds, on a grid every stream shares
// (0: each event as it comes): half the host's CPU per task started, for up to this much more
// latency (cluster.watchBatchMillis in the operators' configuration reference).
inline constexpr int kWatchBatchMillis = 100;

} // namespace kuscia_host::defaults
