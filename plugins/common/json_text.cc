#include "json_text.h"

#include <charconv>
#include <optional>

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

template <typename Int> void appendInteger(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

// One walk of a DOM. nlohmann's own serializer, for what it writes here, is made when first
// needed and kept for the walk: it costs an allocation of its buffers and a locale lookup.
class Writer {
public:
  explicit Writer(std::string& out) : out_(out) {}

  void value(const json& v) {
    switch (v.type()) {
    case json::value_t::object: {
      out_ += '{';
      bool first = true;
      for (const auto& [key, member] : v.get_ref<const json::object_t&>()) {
        if (!first) out_ += ',';
        first = false;
        string(key);
        out_ += ':';
        value(member);
      }
      out_ += '}';
      return;
    }
    case json::value_t::array: {
      out_ += '[';
      bool first = true;
      for (const json& element : v.get_ref<const json::array_t&>()) {
        if (!first) out_ += ',';
        first = false;
        value(element);
      }
      out_ += ']';
      return;
    }
    case json::value_t::string: return string(v.get_ref<const std::string&>());
    case json::value_t::number_integer: return appendInteger(out_, v.get<json::number_integer_t>());
    case json::value_t::number_unsigned:
      return appendInteger(out_, v.get<json::number_unsigned_t>());
    case json::value_t::boolean: out_ += v.get<bool>() ? "true" : "false"; return;
    case json::value_t::null: out_ += "null"; return;
    case json::value_t::number_float:
    case json::value_t::binary:
    case json::value_t::discarded: return nlohmannWrites(v);
    }
  }

private:
  void string(const std::string& s) {
    if (!plain(s)) return nlohmannWrites(json(s));
    out_ += '"';
    out_ += s;
    out_ += '"';
  }
  void nlohmannWrites(const json& v) {
    if (!serializer_) serializer_.emplace(nlohmann::detail::output_adapter<char>(out_), ' ');
    serializer_->dump(v, false, false, 0);
  }

  std::string& out_;
  std::optional<nlohmann::detail::serializer<json>> serializer_;
};

} // namespace

void appendJson(std::string& out, const json& value) {
  Writer(out).value(value);
}

} // namespace kuscia_host::plugins
