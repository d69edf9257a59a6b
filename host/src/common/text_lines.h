// Small text files the host reads line by line (token files), UTF-8 and white space, and JSON
// fields read whatever an answer holds.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kuscia_host {

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF).
bool validUtf8(std::string_view s);

// `s` without leading and trailing white space.
std::string_view trimSpace(std::string_view s);

// Calls `each(lineNumber, line)` (1-based, trimmed) for every line that is neither blank nor a
// '#' comment; stops at, and returns, the first error.
Result<void> forEachLine(std::string_view text,
                         const std::function<Result<void>(int, std::string_view)>& each);

// obj[key] as a string ("" when absent or not one), as a boolean (false likewise), or as is
// (null when absent); for JSON from elsewhere, never throwing.
std::string jsonText(const nlohmann::json& obj, const char* key);
bool jsonFlag(const nlohmann::json& obj, const char* key);
const nlohmann::json& jsonMember(const nlohmann::json& obj, const char* key);

} // namespace kuscia_host
