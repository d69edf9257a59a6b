// Logging: one spdlog logger per component or plugin instance, all writing to shared sinks in
// either text or JSON-lines format. No global registry: loggers come from a LogManager that is
// passed to whoever needs one.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <spdlog/logger.h>
#include <string>
#include <vector>

namespace kuscia_host {

enum class LogFormat { kText, kJson };

// "trace" ... "off" -> level; nullopt when unknown.
std::optional<spdlog::level::level_enum> parseLogLevel(const std::string& name);

class LogManager {
public:
  // Logs to stderr.
  LogManager(LogFormat format, spdlog::level::level_enum defaultLevel);
  // Logs to `out` (tests).
  LogManager(LogFormat format, spdlog::level::level_enum defaultLevel, std::ostream& out);

  // A new logger named `name` at `level` (the default level when nullopt).
  std::shared_ptr<spdlog::logger> logger(const std::string& name,
                                         std::optional<spdlog::level::level_enum> level = {});
  void setFormat(LogFormat format);
  spdlog::level::level_enum defaultLevel() const { return defaultLevel_; }

private:
  void applyFormat();

  LogFormat format_;
  spdlog::level::level_enum defaultLevel_;
  std::vector<spdlog::sink_ptr> sinks_;
};

} // namespace kuscia_host
