#include <kuscia_model/json_text.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

namespace kuscia_host::model {

namespace {

using nlohmann::json;

// Nothing in it that dump() escapes or checks: no control character, quote, backslash, and no
// byte beyond ASCII (nlohmann validates those as UTF-8). Eight bytes at a time: a byte below n
// shows in (w - n per byte) & ~w & the high bits (exact as to whether any byte is).
bool plain(std::string_view s) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  auto below = [](uint64_t w, uint64_t n) { return (w - kOnes * n) & ~w & kHigh; };
  const char* p = s.data();
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, 8);
    if (((w & kHigh) | below(w, 0x20) | below(w ^ (kOnes * '"'), 1) |
         below(w ^ (kOnes * '\\'), 1)) != 0)
      return false;
  }
  for (; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) return false;
  }
  return true;
}

template <typename Int> void appendInteger(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

// A double as nlohmann's serializer lays it out (its to_chars(): the digits as a decimal when
// the point falls within 15 places and 4 zeros after it, with ".0" after an integral value;
// otherwise d.ddde+XX), from the shortest round-trip digits of std::to_chars. nlohmann makes its
// digits with Grisu2, which now and then does not find the shortest; both texts read back as the
// same double. Not finite: null, as nlohmann writes it.
void appendDouble(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  if (std::signbit(v)) out += '-';
  v = std::fabs(v);
  if (v == 0) {
    out += "0.0";
    return;
  }
  char sci[32];
  auto [sciEnd, ec] = std::to_chars(sci, sci + sizeof sci, v, std::chars_format::scientific);
  // sci: d[.ddd]e(+|-)XX
  char digits[20];
  int k = 0;
  const char* p = sci;
  for (; p < sciEnd && *p != 'e'; ++p)
    if (*p != '.') digits[k++] = *p;
  int exponent = 0;
  std::from_chars(p + (p[1] == '+' ? 2 : 1), sciEnd, exponent);
  const int n = exponent + 1; // where the point falls after the first k digits
  constexpr int kMinExp = -4, kMaxExp = 15;
  if (k <= n && n <= kMaxExp) { // digits[000].0
    out.append(digits, static_cast<std::size_t>(k));
    out.append(static_cast<std::size_t>(n - k), '0');
    out += ".0";
  } else if (0 < n && n <= kMaxExp) { // dig.its
    out.append(digits, static_cast<std::size_t>(n));
    out += '.';
    out.append(digits + n, static_cast<std::size_t>(k - n));
  } else if (kMinExp < n && n <= 0) { // 0.[000]digits
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out.append(digits, static_cast<std::size_t>(k));
  } else { // d[.igits]e(+|-)XX, at least two digits of exponent
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits + 1, static_cast<std::size_t>(k - 1));
    }
    const int e = n - 1;
    out += e < 0 ? "e-" : "e+";
    const int magnitude = e < 0 ? -e : e;
    if (magnitude < 10) out += '0';
    appendInteger(out, magnitude);
  }
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
    case json::value_t::number_float: return appendDouble(out_, v.get<double>());
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

bool needsNoEscape(std::string_view s) {
  return plain(s);
}

void appendJson(std::string& out, const json& value) {
  Writer(out).value(value);
}

void appendJsonNumber(std::string& out, double v) {
  appendDouble(out, v);
}

void appendJsonString(std::string& out, std::string_view s) {
  if (!plain(s)) return appendJson(out, json(s));
  out += '"';
  out += s;
  out += '"';
}

} // namespace kuscia_host::model
