// A DOM's JSON text, byte for byte what nlohmann::json::dump() writes, at a fraction of its cost.
//
// The plugins dump a DOM on every status write (the patch, and the digest of what was written)
// and task-history on every recording. nlohmann's serializer walks every string byte through a
// UTF-8 state machine and a buffer; the strings of these documents (names, times, phases) are
// plain ASCII. Here a string with nothing to escape is copied as it is, integers are written
// with std::to_chars, and objects are walked as their maps. What is not plain (a string with a
// byte to escape or beyond ASCII, a floating-point number, binary) is written by nlohmann
// itself, so the text and the errors (invalid UTF-8 throws) stay nlohmann's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kuscia_host::plugins {

// Appends `value`'s compact text (dump() with no indent) to `out`.
void appendJson(std::string& out, const nlohmann::json& value);

inline std::string dumpJson(const nlohmann::json& value) {
  std::string out;
  appendJson(out, value);
  return out;
}

} // namespace kuscia_host::plugins
