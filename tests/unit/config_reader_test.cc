#include <kuscia_host/config_reader.hpp>

#include <gtest/gtest.h>

namespace kuscia_host::sdk {
namespace {

const std::vector<ConfigKey> kTable = {{"n", "integer", "5", ""},
                                       {"s", "string", "x", ""},
                                       {"b", "boolean", "false", ""},
                                       {"m", "string", "a", ""}};

TEST(ConfigReaderTest, DefaultsAndValues) {
  ConfigReader empty("", kTable);
  EXPECT_EQ(empty.integer("n", 5), 5);
  EXPECT_EQ(empty.string("s", "x"), "x");
  ConfigReader r(R"({"n": 7, "s": "y", "b": true, "m": "b"})", kTable);
  EXPECT_EQ(r.integer("n", 5, 0, 10), 7);
  EXPECT_EQ(r.string("s", "x"), "y");
  EXPECT_TRUE(r.boolean("b", false));
  EXPECT_EQ(r.oneOf("m", "a", {"a", "b"}), "b");
  ConfigReader nulls(R"({"n": null})", kTable);
  EXPECT_EQ(nulls.integer("n", 5), 5);
}

TEST(ConfigReaderTest, ErrorsNameTheKey) {
  auto message = [](const std::string& json, auto read) {
    try {
      ConfigReader r(json, kTable);
      read(r);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"nn": 1})", [](auto&) {}),
            "unknown config key 'nn' (known keys: n, s, b, m)");
  EXPECT_EQ(message(R"({"n": "1"})", [](auto& r) { r.integer("n", 0); }),
            "config key 'n': expected an integer, got \"1\"");
  EXPECT_EQ(message(R"({"n": 11})", [](auto& r) { r.integer("n", 0, 0, 10); }),
            "config key 'n': 11 is outside [0, 10]");
  EXPECT_EQ(message(R"({"b": 1})", [](auto& r) { r.boolean("b", false); }),
            "config key 'b': expected true or false, got 1");
  EXPECT_EQ(message(R"({"m": "z"})",
                    [](auto& r) {
                      r.oneOf("m", "a", {"a", "b"});
                    }),
            "config key 'm': 'z' is not one of: a, b");
  EXPECT_EQ(message("[1]", [](auto&) {}), "config must be a mapping of keys to values");
  EXPECT_NE(message("{bad", [](auto&) {}).find("config is not valid JSON"), std::string::npos);
}

} // namespace
} // namespace kuscia_host::sdk
