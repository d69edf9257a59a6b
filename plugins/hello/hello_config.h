// hello's configuration: the table of keys (also its documentation) and the typed result.
#pragma once

#include <kuscia_host/config_reader.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::plugins::hello {

struct HelloConfig {
  int64_t intervalMillis = 10000;
  std::string message = "hello";
};

const std::vector<sdk::ConfigKey>& helloConfigKeys();

// Throws sdk::ConfigError naming the key on bad input.
HelloConfig parseHelloConfig(std::string_view json);

} // namespace kuscia_host::plugins::hello
