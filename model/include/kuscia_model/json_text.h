// A DOM's JSON text, what nlohmann::json::dump() writes, at a fraction of its cost.
//
// The plugins dump a DOM on every status write (the patch, and the digest of what was written)
// and task-history on every recording. nlohmann's serializer walks every string byte through a
// UTF-8 state machine and a buffer; the strings of these documents (names, times, phases) are
// plain ASCII. Here a string with nothing to escape is copied as it is, numbers are written
// with std::to_chars (a double laid out as nlohmann lays it out), and objects are walked as their
// maps. A string with a byte to escape or beyond ASCII, and binary, are written by nlohmann
// itself, so the text and the errors (invalid UTF-8 throws) stay nlohmann's. The one difference:
// a double whose shortest digits nlohmann's Grisu2 misses (some durations, 658523.510110698 for
// one) is written shorter here; both texts read back as the same double.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kuscia_host::model {

// Appends `value`'s compact text (dump() with no indent) to `out`.
void appendJson(std::string& out, const nlohmann::json& value);

// Whether dump() writes the string `s` between quotes as it is: nothing to escape and no byte
// beyond ASCII.
bool needsNoEscape(std::string_view s);

// Appends the string `s` as a JSON string, as dump() writes it.
void appendJsonString(std::string& out, std::string_view s);

// Appends the number `v` as dump() writes a double (see above for the one difference).
void appendJsonNumber(std::string& out, double v);

inline std::string dumpJson(const nlohmann::json& value) {
  std::string out;
  appendJson(out, value);
  return out;
}

} // namespace kuscia_host::model
