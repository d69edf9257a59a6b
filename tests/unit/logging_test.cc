#include "logging/logging.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace kuscia_host {
namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

TEST(LoggingTest, JsonLinesStayValidWithQuotesNewlinesAndBadUtf8) {
  std::ostringstream out;
  LogManager logs(LogFormat::kJson, spdlog::level::info, out);
  auto log = logs.logger("heartbeat/alice");
  log->info("he said \"hi\"\nand left\t\\ \x01");
  log->warn("bad utf8: \xff\xfe");
  auto ls = lines(out.str());
  ASSERT_EQ(ls.size(), 2u) << out.str();
  auto j = nlohmann::json::parse(ls[0]);
  EXPECT_EQ(j["msg"], "he said \"hi\"\nand left\t\\ \x01");
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["logger"], "heartbeat/alice");
  EXPECT_EQ(j["time"].get<std::string>().back(), 'Z');
  EXPECT_TRUE(nlohmann::json::accept(ls[1])) << ls[1];
}

TEST(LoggingTest, TextFormatAndPerLoggerLevels) {
  std::ostringstream out;
  LogManager logs(LogFormat::kText, spdlog::level::info, out);
  auto host = logs.logger("host");
  auto chatty = logs.logger("heartbeat/bob", spdlog::level::debug);
  host->debug("hidden");
  chatty->debug("shown");
  host->info("loaded plugin x");
  auto ls = lines(out.str());
  ASSERT_EQ(ls.size(), 2u) << out.str();
  EXPECT_NE(ls[0].find("debug [heartbeat/bob] shown"), std::string::npos) << ls[0];
  EXPECT_NE(ls[1].find("info [host] loaded plugin x"), std::string::npos) << ls[1];
  EXPECT_EQ(ls[1][4], '-'); // 2026-...
}

TEST(LoggingTest, ParseLogLevel) {
  EXPECT_EQ(parseLogLevel("warn"), spdlog::level::warn);
  EXPECT_EQ(parseLogLevel("off"), spdlog::level::off);
  EXPECT_FALSE(parseLogLevel("loud").has_value());
}

} // namespace
} // namespace kuscia_host
