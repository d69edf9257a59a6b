// Typed, validated plugin configuration (header-only; needs nlohmann/json, nothing else).
//
// A plugin declares its keys as a table (key, type, default, description). ConfigReader parses
// the JSON the host passes to on_create, rejects keys that are not in the table, and reads each
// key with a type and range check. Every error is a ConfigError whose message names the key and
// says what was expected, so the host can show it to the operator as is.
#ifndef KUSCIA_HOST_CONFIG_READER_HPP
#define KUSCIA_HOST_CONFIG_READER_HPP

#include <kuscia_host/plugin.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::sdk {

// A bad config; key() names the key it concerns ("" for the config as a whole).
class ConfigError : public ConfigKeyError {
public:
  explicit ConfigError(const std::string& message) : ConfigKeyError("", message) {}
  ConfigError(std::string key, const std::string& message)
      : ConfigKeyError(std::move(key), message) {}
};

// One row of a plugin's configuration table; also the source of its documentation.
struct ConfigKey {
  std::string key;
  std::string type; // "integer", "string", "boolean", "number", "mapping of strings"
  std::string defaultValue;
  std::string description;
};

class ConfigReader {
public:
  ConfigReader(std::string_view json, std::vector<ConfigKey> table) : table_(std::move(table)) {
    try {
      doc_ = json.empty() ? nlohmann::json::object() : nlohmann::json::parse(json);
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(std::string("config is not valid JSON: ") + e.what());
    }
    if (doc_.is_null()) doc_ = nlohmann::json::object();
    if (!doc_.is_object()) throw ConfigError("config must be a mapping of keys to values");
    for (const auto& item : doc_.items()) {
      if (find(item.key()) == nullptr)
        throw ConfigError(item.key(),
                          "unknown config key '" + item.key() + "' (known keys: " + known() + ")");
    }
  }

  int64_t integer(const std::string& key, int64_t fallback, int64_t min = INT64_MIN,
                  int64_t max = INT64_MAX) const {
    const auto* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_number_integer())
      throw ConfigError(key, "config key '" + key + "': expected an integer, got " + v->dump());
    int64_t n = v->get<int64_t>();
    if (n < min || n > max)
      throw ConfigError(key, "config key '" + key + "': " + std::to_string(n) + " is outside [" +
                                 std::to_string(min) + ", " + std::to_string(max) + "]");
    return n;
  }
  double number(const std::string& key, double fallback) const {
    const auto* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_number())
      throw ConfigError(key, "config key '" + key + "': expected a number, got " + v->dump());
    return v->get<double>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    const auto* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean())
      throw ConfigError(key, "config key '" + key + "': expected true or false, got " + v->dump());
    return v->get<bool>();
  }
  std::string string(const std::string& key, const std::string& fallback) const {
    const auto* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_string())
      throw ConfigError(key, "config key '" + key + "': expected a string, got " + v->dump());
    return v->get<std::string>();
  }
  // A string that must be one of `allowed`.
  std::string oneOf(const std::string& key, const std::string& fallback,
                    const std::vector<std::string>& allowed) const {
    std::string s = string(key, fallback);
    for (const auto& a : allowed)
      if (a == s) return s;
    std::string list;
    for (const auto& a : allowed)
      list += (list.empty() ? "" : ", ") + a;
    throw ConfigError(key, "config key '" + key + "': '" + s + "' is not one of: " + list);
  }

  // A mapping of names to strings ({"X-Tenant": "a"}); empty when the key is absent.
  std::map<std::string, std::string> stringMap(const std::string& key) const {
    std::map<std::string, std::string> out;
    const auto* v = get(key);
    if (v == nullptr) return out;
    if (!v->is_object())
      throw ConfigError(key, "config key '" + key +
                                 "': expected a mapping of names to strings, got " + v->dump());
    for (const auto& [name, value] : v->items()) {
      if (!value.is_string())
        throw ConfigError(key, "config key '" + key + "': the value of '" + name +
                                   "' must be a string, got " + value.dump());
      out.emplace(name, value.get<std::string>());
    }
    return out;
  }

  const std::vector<ConfigKey>& table() const { return table_; }

private:
  const ConfigKey* find(const std::string& key) const {
    for (const auto& k : table_)
      if (k.key == key) return &k;
    return nullptr;
  }
  const nlohmann::json* get(const std::string& key) const {
    if (find(key) == nullptr)
      throw std::logic_error("config key '" + key + "' is not in the table");
    auto it = doc_.find(key);
    return it == doc_.end() || it->is_null() ? nullptr : &*it;
  }
  std::string known() const {
    std::string s;
    for (const auto& k : table_)
      s += (s.empty() ? "" : ", ") + k.key;
    return s.empty() ? "none" : s;
  }

  std::vector<ConfigKey> table_;
  nlohmann::json doc_;
};

} // namespace kuscia_host::sdk

#endif // KUSCIA_HOST_CONFIG_READER_HPP
