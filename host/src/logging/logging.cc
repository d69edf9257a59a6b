#include "logging/logging.h"

#include <nlohmann/json.hpp>
#include <spdlog/details/fmt_helper.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <chrono>
#include <ctime>

namespace kuscia_host {
namespace {

constexpr const char* kTextPattern = "%Y-%m-%dT%H:%M:%S.%fZ %l [%n] %v";

// One JSON object per line: {"time":..., "level":..., "logger":..., "msg":...}. The message is
// escaped by nlohmann_json, so quotes, newlines and invalid UTF-8 never break the line.
class JsonFormatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto secs = std::chrono::time_point_cast<std::chrono::seconds>(msg.time);
    auto micros = std::chrono::duration_cast<std::chrono::microseconds>(msg.time - secs).count();
    std::time_t t = std::chrono::system_clock::to_time_t(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[48];
    std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(stamp + n, sizeof stamp - n, ".%06lldZ", static_cast<long long>(micros));
    auto level = spdlog::level::to_string_view(msg.level);
    std::string line = R"({"time":")";
    line += stamp;
    line += R"(","level":")";
    line.append(level.data(), level.size());
    line += R"(","logger":)";
    line += quote(std::string(msg.logger_name.data(), msg.logger_name.size()));
    line += R"(,"msg":)";
    line += quote(std::string(msg.payload.data(), msg.payload.size()));
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }

private:
  static std::string quote(const std::string& s) {
    return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
};

} // namespace

std::optional<spdlog::level::level_enum> parseLogLevel(const std::string& name) {
  if (name == "trace") return spdlog::level::trace;
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warn") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  if (name == "off") return spdlog::level::off;
  return std::nullopt;
}

LogManager::LogManager(LogFormat format, spdlog::level::level_enum defaultLevel)
    : format_(format), defaultLevel_(defaultLevel) {
  sinks_.push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  applyFormat();
}

LogManager::LogManager(LogFormat format, spdlog::level::level_enum defaultLevel, std::ostream& out)
    : format_(format), defaultLevel_(defaultLevel) {
  sinks_.push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(out, true));
  applyFormat();
}

void LogManager::setFormat(LogFormat format) {
  format_ = format;
  applyFormat();
}

void LogManager::applyFormat() {
  for (auto& sink : sinks_) {
    if (format_ == LogFormat::kJson)
      sink->set_formatter(std::make_unique<JsonFormatter>());
    else
      sink->set_formatter(std::make_unique<spdlog::pattern_formatter>(
          kTextPattern, spdlog::pattern_time_type::utc));
  }
}

std::shared_ptr<spdlog::logger> LogManager::logger(const std::string& name,
                                                   std::optional<spdlog::level::level_enum> level) {
  auto l = std::make_shared<spdlog::logger>(name, sinks_.begin(), sinks_.end());
  l->set_level(level.value_or(defaultLevel_));
  l->flush_on(spdlog::level::warn);
  return l;
}

} // namespace kuscia_host
