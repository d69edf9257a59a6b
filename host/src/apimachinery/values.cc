#include "apimachinery/values.h"

namespace kuscia_host::apimachinery {

std::optional<bool> parseGoBool(const std::string& s) {
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") return true;
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False")
    return false;
  return std::nullopt;
}

bool goBoolOr(const std::optional<std::string>& value, bool fallback) {
  if (!value) return fallback;
  return parseGoBool(*value).value_or(fallback);
}

} // namespace kuscia_host::apimachinery
