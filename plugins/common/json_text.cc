#include "json_text.h"

#include <charconv>

namespace kuscia_host::plugins {

namespace {

using nlohmann::json;

// Nothing in it that dump() escapes or checks: no control character, quote, backslash, and no
// byte beyond ASCII (nlohmann validates those as UTF-8).
bool plain(const std::string& s) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) return false;
  }
  return true;
}

void appendString(std::string& out, const std::string& s) {
  if (!plain(s)) {
    out += json(s).dump();
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

template <typename Int> void appendInteger(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

} // namespace

void appendJson(std::string& out, const json& value) {
  switch (value.type()) {
  case json::value_t::object: {
    out += '{';
    bool first = true;
    for (const auto& [key, member] : value.get_ref<const json::object_t&>()) {
      if (!first) out += ',';
      first = false;
      appendString(out, key);
      out += ':';
      appendJson(out, member);
    }
    out += '}';
    return;
  }
  case json::value_t::array: {
    out += '[';
    bool first = true;
    for (const json& element : value.get_ref<const json::array_t&>()) {
      if (!first) out += ',';
      first = false;
      appendJson(out, element);
    }
    out += ']';
    return;
  }
  case json::value_t::string: return appendString(out, value.get_ref<const std::string&>());
  case json::value_t::number_integer:
    return appendInteger(out, value.get<json::number_integer_t>());
  case json::value_t::number_unsigned:
    return appendInteger(out, value.get<json::number_unsigned_t>());
  case json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
  case json::value_t::null: out += "null"; return;
  case json::value_t::number_float:
  case json::value_t::binary:
  case json::value_t::discarded: out += value.dump(); return;
  }
}

} // namespace kuscia_host::plugins
