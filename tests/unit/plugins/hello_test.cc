// The hello plugin's config and logic, through the SDK's fake host.
#include "hello.h"

#include <kuscia_host/testing/fake_host.hpp>

#include <gtest/gtest.h>

namespace kuscia_host::plugins::hello {
namespace {

const kh_plugin_v1_t* descriptor() {
  return sdk::pluginDescriptor<Hello>("hello");
}

TEST(HelloConfigTest, Defaults) {
  auto c = parseHelloConfig("{}");
  EXPECT_EQ(c.intervalMillis, 10000);
  EXPECT_EQ(c.message, "hello");
}

TEST(HelloConfigTest, RejectsBadConfig) {
  EXPECT_THROW(parseHelloConfig(R"({"interval": 5})"), sdk::ConfigError);
  EXPECT_THROW(parseHelloConfig(R"({"intervalMillis": "fast"})"), sdk::ConfigError);
  EXPECT_THROW(parseHelloConfig(R"({"intervalMillis": 1})"), sdk::ConfigError);
  EXPECT_THROW(parseHelloConfig(R"({"message": ""})"), sdk::ConfigError);
  testing::FakeHost host;
  EXPECT_FALSE(host.create(descriptor(), R"({"intervalMillis": 1})"));
  EXPECT_EQ(host.error(), "config key 'intervalMillis': 1 is outside [10, 86400000]");
}

TEST(HelloTest, TicksOnItsIntervalAndReportsMetrics) {
  testing::FakeHost host("bob");
  ASSERT_TRUE(host.create(descriptor(), R"({"intervalMillis": 100, "message": "hi"})"))
      << host.error();
  ASSERT_TRUE(host.start()) << host.error();
  EXPECT_TRUE(host.logged("heartbeat every 100 ms for domain bob"));
  host.advanceMillis(99);
  EXPECT_EQ(host.metric("kh_hello_ticks_total"), 0); // exported from registration; no tick yet
  host.advanceMillis(1);
  EXPECT_EQ(host.metric("kh_hello_ticks_total"), 1);
  host.advanceMillis(250);
  EXPECT_EQ(host.metric("kh_hello_ticks_total"), 3);
  EXPECT_DOUBLE_EQ(host.metric("kh_hello_last_tick_seconds"),
                   static_cast<double>(host.wallTimeNanos() - 50000000) / 1e9);
  EXPECT_TRUE(host.logged("hi from bob (tick 3)"));
  EXPECT_EQ(host.callbackErrors(), 0);
  host.stop();
  EXPECT_EQ(host.activeTimers(), 0u);
}

} // namespace
} // namespace kuscia_host::plugins::hello
