// heartbeat_test.cc: the plugin without the daemon, through the SDK's fake host (its real C
// descriptor, a manual clock).
#include "heartbeat.h"

#include <kuscia_host/testing/fake_host.hpp>

#include <gtest/gtest.h>

TEST(HeartbeatTest, BeatsEveryInterval) {
  kuscia_host::testing::FakeHost host("alice");
  ASSERT_TRUE(host.create(kuscia_host::sdk::pluginDescriptor<Heartbeat>("heartbeat"),
                          R"({"intervalMillis": 100})"))
      << host.error();
  ASSERT_TRUE(host.start());
  host.advanceMillis(250);
  EXPECT_EQ(host.metric("heartbeat_beats_total"), 2);
}

TEST(HeartbeatTest, RefusesAnIntervalOutOfRange) {
  kuscia_host::testing::FakeHost host("alice");
  EXPECT_FALSE(host.create(kuscia_host::sdk::pluginDescriptor<Heartbeat>("heartbeat"),
                           R"({"intervalMillis": 1})"));
  EXPECT_NE(host.error().find("intervalMillis"), std::string::npos) << host.error();
}
