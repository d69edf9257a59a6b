// task-history's configuration: every key optional.
#pragma once

#include <kuscia_host/config_reader.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::plugins::history {

inline constexpr const char* kDefaultDatabase = "/var/lib/kuscia-host/history.db";

struct HistoryConfig {
  std::string database = kDefaultDatabase; // a SQLite file, or a postgresql:// URI
  std::string password;                    // PostgreSQL's, read from passwordFile
  std::string taskNamespace = "cross-domain";
  int64_t retentionDays = 90;
  int64_t maxTasks = 0; // 0: no cap
  int64_t queueSize = 10000;
  int64_t recordDelaySeconds = 5;
  int64_t stuckAfterSeconds = 300;
};

const std::vector<sdk::ConfigKey>& historyConfigKeys();

// Throws sdk::ConfigError naming the key (a passwordFile that cannot be read, too).
HistoryConfig parseHistoryConfig(std::string_view json);

} // namespace kuscia_host::plugins::history
