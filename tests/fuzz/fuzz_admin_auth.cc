// What the admin server's authentication reads from outside: the Authorization header, the
// static token file, kube-apiserver's token auth file, and the review answers the embedded API
// server gives (any JSON body). The first byte picks the parser. A bearer token, when one is
// found, is printable and space-free, and parsing never throws.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "admin/admin_auth.h"
#include "apiserver/review.h"
#include "fuzz_support.h"

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace kuscia_host;
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
  case 0:
    if (auto token = bearerToken(in)) {
      if (token->empty()) kh_fuzz::fail("an empty bearer token");
      for (char c : *token)
        if (c < 0x21 || c > 0x7e) kh_fuzz::fail("a bearer token with a space or control byte");
    }
    break;
  case 1:
    if (auto tokens = parseTokenFile(in))
      for (const auto& [token, name] : *tokens)
        if (token.empty() || name.empty())
          kh_fuzz::fail("a token file entry without token or name");
    break;
  case 2: (void)apiserver::parseTokenAuthFile(in); break;
  default: {
    auto review = nlohmann::json::parse(in, nullptr, false);
    if (review.is_discarded()) return 0;
    (void)apiserver::answerTokenReview(review, {{"t", {"u", "1", {"g"}}}});
    (void)apiserver::answerSubjectAccessReview(
        review, [&review](const std::string&, const std::string&) {
          return std::vector<nlohmann::json>{review}; // the input as every stored RBAC object
        });
    break;
  }
  }
  return 0;
}
