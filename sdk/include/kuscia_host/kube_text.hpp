// Kubernetes text formats a plugin meets in objects (header-only, C++17, no dependencies):
// metav1.Time (RFC 3339: read with or without a fraction and with any offset, written in UTC)
// and object names (DNS labels and subdomains). The host validates with the same code.
#ifndef KUSCIA_HOST_KUBE_TEXT_HPP
#define KUSCIA_HOST_KUBE_TEXT_HPP

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace kuscia_host::sdk {

namespace detail {

// Days since 1970-01-01 of a civil date, and back (Howard Hinnant's algorithms).
inline int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

inline void civilFromDays(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

// Reads exactly `n` digits at s[i]; false if any is not a digit.
inline bool digits(std::string_view s, std::size_t i, std::size_t n, int64_t& out) {
  if (i + n > s.size()) return false;
  out = 0;
  for (std::size_t k = 0; k < n; ++k) {
    char c = s[i + k];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
// parseTime's words: "YYYY-MM-" and "DDTHH:MM", each separator's byte and where they are.
constexpr uint64_t kDateSeparators = (uint64_t{'-'} << 32) | (uint64_t{'-'} << 56);
constexpr uint64_t kDateSeparatorMask = (uint64_t{0xFF} << 32) | (uint64_t{0xFF} << 56);
constexpr uint64_t kTimeSeparators = (uint64_t{'t'} << 16) | (uint64_t{':'} << 40);
constexpr uint64_t kTimeSeparatorMask = (uint64_t{0xFF} << 16) | (uint64_t{0xFF} << 40);

// The eight bytes at p: separators where `mask` says (after `fold` is or'ed in: 'T' reads as
// 't'), digits elsewhere, read as the numbers of 4, 2 (date) or 2, 2, 2 (time) digits.
inline bool wordOfDigits(const char* p, uint64_t separators, uint64_t mask, uint64_t fold,
                         int64_t& first, int64_t& second, int64_t* third = nullptr) {
  uint64_t w = 0;
  std::memcpy(&w, p, 8);
  if (((w | fold) & mask) != separators) return false;
  w = (w & ~mask) | (mask & 0x3030303030303030ULL);
  constexpr uint64_t kHighNibbles = 0xF0F0F0F0F0F0F0F0ULL;
  if (((w & kHighNibbles) | (((w + 0x0606060606060606ULL) & kHighNibbles) >> 4)) !=
      0x3333333333333333ULL)
    return false;
  w -= 0x3030303030303030ULL;
  auto digit = [w](int k) { return static_cast<int64_t>((w >> (8 * k)) & 0xFF); };
  if (third == nullptr) { // YYYY-MM-
    first = digit(0) * 1000 + digit(1) * 100 + digit(2) * 10 + digit(3);
    second = digit(5) * 10 + digit(6);
  } else { // DDTHH:MM
    first = digit(0) * 10 + digit(1);
    second = digit(3) * 10 + digit(4);
    *third = digit(6) * 10 + digit(7);
  }
  return true;
}
#endif

} // namespace detail

// Nanoseconds since the Unix epoch, or nullopt when `s` is not RFC 3339 (Go's time.RFC3339
// layout: date, 'T', time, an optional fraction of up to 9 digits, 'Z' or +hh:mm/-hh:mm; a
// second of 60 and out-of-range fields are refused, as Go refuses them; so are times outside the
// 64-bit nanosecond range, 1677-09-21T00:12:44Z to 2262-04-11T23:47:15.999999999Z).
inline std::optional<int64_t> parseTime(std::string_view s) {
  if (s.size() < 20) return std::nullopt;
  // "YYYY-MM-DDTHH:MM:SS": every status entry's times are read on every event of a task.
  int64_t year, month, day, hour, minute, second;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // Sixteen bytes as two words: the separators checked and replaced by '0', then each word's
  // eight bytes checked as digits at once (a byte is one when its high nibble is 3 and adding 6
  // keeps it so).
  if (!detail::wordOfDigits(s.data(), detail::kDateSeparators, detail::kDateSeparatorMask, 0, year,
                            month) ||
      !detail::wordOfDigits(s.data() + 8, detail::kTimeSeparators, detail::kTimeSeparatorMask,
                            uint64_t{0x20} << 16, day, hour, &minute) ||
      s[16] != ':' || !detail::digits(s, 17, 2, second))
    return std::nullopt;
#else
  constexpr unsigned char kDigitAt[] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18};
  unsigned char d[sizeof kDigitAt];
  unsigned bad = 0;
  for (std::size_t k = 0; k < sizeof kDigitAt; ++k) {
    d[k] = static_cast<unsigned char>(s[kDigitAt[k]] - '0');
    bad |= d[k] > 9 ? 1U : 0U;
  }
  if (bad != 0 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
      s[16] != ':')
    return std::nullopt;
  year = d[0] * 1000 + d[1] * 100 + d[2] * 10 + d[3];
  month = d[4] * 10 + d[5];
  day = d[6] * 10 + d[7];
  hour = d[8] * 10 + d[9];
  minute = d[10] * 10 + d[11];
  second = d[12] * 10 + d[13];
#endif
  static const unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59)
    return std::nullopt;
  if (day > kDays[month - 1]) {
    // Only 29 February asks whether the year is a leap year.
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (!(month == 2 && day == 29 && leap)) return std::nullopt;
  }
  std::size_t i = 19;
  int64_t fraction = 0;
  if (i < s.size() && s[i] == '.') {
    std::size_t start = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
      ++i;
    std::size_t n = i - start;
    if (n == 0 || n > 9) return std::nullopt;
    detail::digits(s, start, n, fraction);
    for (std::size_t k = n; k < 9; ++k)
      fraction *= 10;
  }
  int64_t offset = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int64_t oh, om;
    if (!detail::digits(s, i + 1, 2, oh) || i + 3 >= s.size() || s[i + 3] != ':' ||
        !detail::digits(s, i + 4, 2, om) || oh > 23 || om > 59)
      return std::nullopt;
    offset = (oh * 3600 + om * 60) * (s[i] == '+' ? 1 : -1);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  int64_t days =
      detail::daysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset;
  // Nanoseconds since the epoch fit 64 bits from 1677-09-21 to 2262-04-11: times outside are
  // refused (Go represents them; no startup happens then).
  if (seconds < -9223372036 || seconds > 9223372035) return std::nullopt;
  return seconds * 1000000000 + fraction;
}

// From `from` to `to` in nanoseconds, held at the ends of int64_t where the difference of two
// times parseTime reads (years 1677 to 2262) does not fit.
inline int64_t elapsed(int64_t from, int64_t to) {
  int64_t nanos = 0;
  if (!__builtin_sub_overflow(to, from, &nanos)) return nanos;
  return to > from ? INT64_MAX : INT64_MIN;
}

enum class TimePrecision {
  kSeconds, // 2024-05-20T08:00:10Z, what metav1.Time writes
  kMillis,  // 2024-05-20T08:00:10.250Z
  kAsGiven, // the fraction kept when not zero, without trailing zeros
};

// formatTime's text written into `buf`, without a string: its length.
inline std::size_t formatTimeTo(char (&buf)[48], int64_t ns,
                                TimePrecision precision = TimePrecision::kSeconds) {
  int64_t secs = ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000);
  int64_t frac = ns - secs * 1000000000;
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  int64_t rem = secs - days * 86400;
  int64_t y;
  unsigned m, d;
  detail::civilFromDays(days, y, m, d);
  char* p = buf;
  auto digits = [&p](int64_t v, int width) {
    for (int i = width - 1; i >= 0; --i) {
      p[i] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
    p += width;
  };
  if (y >= 0 && y <= 9999) {
    digits(y, 4);
  } else { // outside four digits: as printf writes it
    p += std::snprintf(p, 24, "%04lld", static_cast<long long>(y));
  }
  *p++ = '-';
  digits(m, 2);
  *p++ = '-';
  digits(d, 2);
  *p++ = 'T';
  digits(rem / 3600, 2);
  *p++ = ':';
  digits(rem / 60 % 60, 2);
  *p++ = ':';
  digits(rem % 60, 2);
  if (precision == TimePrecision::kMillis) {
    *p++ = '.';
    digits(frac / 1000000, 3);
  } else if (precision == TimePrecision::kAsGiven && frac != 0) {
    *p++ = '.';
    digits(frac, 9);
    while (p[-1] == '0')
      --p;
  }
  *p++ = 'Z';
  return static_cast<std::size_t>(p - buf);
}

// RFC 3339 in UTC at the given precision. Digits are written by hand: every status entry, timeline
// document and annotation formats times, and snprintf cost more than the rest of the work.
inline std::string formatTime(int64_t ns, TimePrecision precision = TimePrecision::kSeconds) {
  char buf[48];
  return std::string(buf, formatTimeTo(buf, ns, precision));
}

// parseTime then formatTime(kAsGiven): the canonical form of a time read from an object.
inline std::optional<std::string> normalizeTime(std::string_view text) {
  auto t = parseTime(text);
  if (!t) return std::nullopt;
  return formatTime(*t, TimePrecision::kAsGiven);
}

// A DNS label (namespace names): lowercase alphanumerics and '-', 1..63, alphanumeric at both
// ends.
inline bool isDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  return s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string_view::npos;
}

// A DNS subdomain (most object names): DNS labels joined by '.', at most 253 characters.
inline bool isDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = s.find('.', start);
    if (!isDnsLabel(s.substr(start, dot == std::string_view::npos ? dot : dot - start)))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

} // namespace kuscia_host::sdk

#endif // KUSCIA_HOST_KUBE_TEXT_HPP
