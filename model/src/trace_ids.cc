#include "kuscia_model/trace_ids.h"

#include <openssl/evp.h>

#include <algorithm>

namespace kuscia_host::model {

namespace {

template <std::size_t N> std::array<uint8_t, N> firstBytes(std::string_view text) {
  std::array<uint8_t, 32> digest{};
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &n, EVP_sha256(), nullptr);
  std::array<uint8_t, N> id{};
  std::copy_n(digest.begin(), N, id.begin());
  if (std::all_of(id.begin(), id.end(), [](uint8_t b) { return b == 0; })) id[N - 1] = 1;
  return id;
}

} // namespace

std::string hex(const uint8_t* data, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 15]);
  }
  return out;
}

TraceId traceIdOf(std::string_view task) {
  return firstBytes<16>("kuscia-host/trace/v1\n" + std::string(task));
}

SpanId spanIdOf(const TraceId& trace, std::string_view party, std::string_view entry,
                std::string_view incarnation, std::string_view kind) {
  std::string text = "kuscia-host/span/v1\n" + hex(trace);
  for (std::string_view part : {party, entry, incarnation, kind})
    text.append("\n").append(part);
  return firstBytes<8>(text);
}

} // namespace kuscia_host::model
