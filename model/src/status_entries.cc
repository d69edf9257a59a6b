#include <kuscia_model/status_entries.h>
#include <kuscia_model/timeline.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <kuscia_model/json_text.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>

namespace kuscia_host::model {

using nlohmann::json;

namespace {

constexpr std::size_t kBad = std::string_view::npos;

// Character classes of the scanner: what ends a number or literal, and what a bracket scan stops
// at (a quote or a bracket).
struct Classes {
  bool endsLiteral[256] = {};
  bool structural[256] = {};
  constexpr Classes() {
    for (unsigned char c : std::string_view(",]} \n\r\t"))
      endsLiteral[c] = true;
    for (unsigned char c : std::string_view("\"{}[]"))
      structural[c] = true;
  }
};
constexpr Classes kClasses;

bool is(const bool (&table)[256], char c) {
  return table[static_cast<unsigned char>(c)];
}

std::size_t skipSpace(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
    ++i;
  return i;
}

// The index of the first quote or backslash at or after s[i]; kBad when there is none.
// Sixteen bytes at a time where SSE2 is (every x86-64), eight elsewhere: the strings of a status
// (keys, times, names) are a few words long, and two memchr calls per string cost more than the
// string did (callgrind: a tenth of the scanner's instructions).
std::size_t quoteOrEscape(std::string_view s, std::size_t i) {
#if defined(__SSE2__)
  const __m128i quotes = _mm_set1_epi8('"'), escapes = _mm_set1_epi8('\\');
  for (; i + 16 <= s.size(); i += 16) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    const int m =
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(w, quotes), _mm_cmpeq_epi8(w, escapes)));
    if (m != 0) return i + static_cast<std::size_t>(std::countr_zero(static_cast<unsigned>(m)));
  }
#endif
  if constexpr (std::endian::native == std::endian::little) {
    constexpr uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
    constexpr uint64_t kQuotes = kOnes * '"', kEscapes = kOnes * '\\';
    // The high bit of each zero byte of v; the lowest one set is exact (a borrow only marks
    // bytes above a zero byte).
    auto zeroBytes = [](uint64_t v) { return (v - kOnes) & ~v & kHighs; };
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, 8);
      if (uint64_t m = zeroBytes(w ^ kQuotes) | zeroBytes(w ^ kEscapes); m != 0)
        return i + static_cast<std::size_t>(std::countr_zero(m)) / 8;
    }
  }
  for (; i < s.size(); ++i)
    if (s[i] == '"' || s[i] == '\\') return i;
  return kBad;
}

// s[i] is '"': the index after the closing quote.
std::size_t skipString(std::string_view s, std::size_t i) {
  for (++i;;) {
    std::size_t at = quoteOrEscape(s, i);
    if (at == kBad) return kBad;
    if (s[at] == '"') return at + 1;
    i = at + 2; // past the backslash and what it escapes
  }
}

// One value starting at s[i] (no leading space): the index after it. Brackets are matched and
// strings skipped; the rest of JSON's grammar is not checked (the host's projection wrote it).
std::size_t skipValue(std::string_view s, std::size_t i) {
  if (i >= s.size()) return kBad;
  if (s[i] == '"') return skipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    std::size_t depth = 0;
    for (; i < s.size(); ++i) {
      char c = s[i];
      if (!is(kClasses.structural, c)) continue;
      if (c == '"') {
        i = skipString(s, i);
        if (i == kBad) return kBad;
        --i; // the loop's increment
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return kBad;
  }
  std::size_t start = i;
  while (i < s.size() && !is(kClasses.endsLiteral, s[i]))
    ++i;
  return i == start ? kBad : i;
}

// Walks the members of the object starting at s[i] (no leading space): value(rawKey, at) is
// called with the index where each member's value starts and returns the index after it (kBad to
// refuse it). The index after the object's closing brace, or kBad when it is not an object.
// rawKey is the key's text between its quotes, escapes left as they are.
template <class Value> std::size_t walkMembers(std::string_view s, std::size_t i, Value&& value) {
  if (i >= s.size() || s[i] != '{') return kBad;
  i = skipSpace(s, i + 1);
  if (i < s.size() && s[i] == '}') return i + 1;
  while (true) {
    if (i >= s.size() || s[i] != '"') return kBad;
    std::size_t keyEnd = skipString(s, i);
    if (keyEnd == kBad) return kBad;
    std::string_view key = s.substr(i + 1, keyEnd - i - 2);
    i = skipSpace(s, keyEnd);
    if (i >= s.size() || s[i] != ':') return kBad;
    i = skipSpace(s, i + 1);
    std::size_t valueEnd = value(key, i);
    if (valueEnd == kBad) return kBad;
    i = skipSpace(s, valueEnd);
    if (i >= s.size()) return kBad;
    if (s[i] == '}') return i + 1;
    if (s[i] != ',') return kBad;
    i = skipSpace(s, i + 1);
  }
}

// Calls member(rawKey, value) for each member of the object starting at s[i] (no leading space);
// the index after its closing brace, or kBad when it is not an object (or `member` refused one).
template <class Member> std::size_t walkObject(std::string_view s, std::size_t i, Member&& member) {
  return walkMembers(s, i, [&s, &member](std::string_view key, std::size_t at) {
    std::size_t end = skipValue(s, at);
    if (end == kBad || !member(key, s.substr(at, end - at))) return kBad;
    return end;
  });
}

// walkObject over the whole text s (spaces around the object allowed); false when it is not an
// object.
template <class Member> bool forEachMember(std::string_view s, Member&& member) {
  std::size_t end = walkObject(s, skipSpace(s, 0), std::forward<Member>(member));
  return end != kBad && skipSpace(s, end) == s.size();
}

// Calls element(span) for each element of the array that is the whole text s (spaces around it
// allowed); false when s is not an array this scanner can walk, or `element` refused one.
template <class Element> bool forEachElement(std::string_view s, Element&& element) {
  std::size_t i = skipSpace(s, 0);
  if (i >= s.size() || s[i] != '[') return false;
  i = skipSpace(s, i + 1);
  if (i < s.size() && s[i] == ']') return skipSpace(s, i + 1) == s.size();
  while (true) {
    std::size_t end = skipValue(s, i);
    if (end == kBad || !element(s.substr(i, end - i))) return false;
    i = skipSpace(s, end);
    if (i >= s.size()) return false;
    if (s[i] == ']') return skipSpace(s, i + 1) == s.size();
    if (s[i] != ',') return false;
    i = skipSpace(s, i + 1);
  }
}

// A key as its text between quotes has it; one with an escape is decoded by the full parser
// (Kubernetes names have none). nullopt when it does not decode.
std::optional<std::string> decodeKey(std::string_view rawKey) {
  if (rawKey.find('\\') == std::string_view::npos) return std::string(rawKey);
  // (Built by append: GCC 12 at -O3 warns falsely of overlap in "\"" + std::string(...).)
  std::string quoted;
  quoted.reserve(rawKey.size() + 2);
  quoted.append(1, '"').append(rawKey).append(1, '"');
  json decoded = json::parse(quoted, nullptr, false);
  if (!decoded.is_string()) return std::nullopt;
  return decoded.get<std::string>();
}

// One entry's part of a digest of own entries. The digest is kNoEntries plus a sum of these, so
// that the order of the entries does not matter.
uint64_t entryDigest(std::string_view key, std::string_view valueText) {
  const std::hash<std::string_view> hash;
  const uint64_t keyHash = hash(key);
  // Mixed: a sum of well-mixed terms.
  return mixBits((keyHash * 0x9E3779B97F4A7C15ULL) ^ hash(valueText));
}

// The digest of no own entries (not 0, which means "not known"; a sum that comes to 0 is as
// unlikely as any other collision of 64 bits).
constexpr uint64_t kNoEntries = 0x6A09E667F3BCC909ULL;

} // namespace

std::optional<std::string> decodedKey(std::string_view rawKey) {
  return decodeKey(rawKey);
}

std::optional<std::vector<std::string_view>> arrayElements(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(8); // a projection's fields, a few subsets: one allocation, not one per doubling
  if (!forEachElement(s, [&out](std::string_view element) {
        out.push_back(element);
        return true;
      }))
    return std::nullopt;
  return out;
}

std::optional<bool> subsetsHaveAddress(std::string_view subsetsJson) {
  if (subsetsJson == "null") return false;
  // The first subset that decides (one with an address: true; one the scanner cannot read:
  // nullopt) is the answer; the rest of the array is still walked, so text that is not an array
  // is refused whatever came first. No subset or address list is copied out.
  std::optional<std::optional<bool>> decided;
  bool walked = forEachElement(subsetsJson, [&decided](std::string_view subset) {
    if (decided) return true;
    std::optional<std::string_view> addresses;
    bool members = forEachMember(subset, [&addresses](std::string_view rawKey, std::string_view v) {
      if (rawKey == "addresses" || (rawKey.find('\\') != std::string_view::npos &&
                                    decodeKey(rawKey) == std::optional<std::string>("addresses")))
        addresses = v;
      return true;
    });
    if (!members) {
      if (subset == "null" || subset.front() != '{') return true; // not an object: no address
      decided = std::optional<bool>();
      return true;
    }
    if (!addresses || addresses->front() != '[') return true;
    std::size_t count = 0;
    if (!forEachElement(*addresses, [&count](std::string_view) {
          ++count;
          return true;
        }))
      decided = std::optional<bool>();
    else if (count > 0)
      decided = std::optional<bool>(true);
    return true;
  });
  if (!walked) return std::nullopt;
  return decided ? *decided : std::optional<bool>(false);
}

std::optional<std::string_view> stringView(std::string_view v, std::string& decoded) {
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') return std::nullopt;
  std::string_view inside = v.substr(1, v.size() - 2);
  if (inside.find('\\') == std::string_view::npos) return inside;
  auto text = decodeKey(inside); // a key's text decodes as any string's
  if (!text) return std::nullopt;
  decoded = std::move(*text);
  return std::string_view(decoded);
}

std::optional<std::string> stringValue(std::string_view v) {
  std::string decoded;
  auto text = stringView(v, decoded);
  return text ? std::optional<std::string>(*text) : std::nullopt;
}

std::vector<std::string> leadingStrings(std::string_view fieldsJson, std::size_t n) {
  std::vector<std::string> out(n);
  const std::string_view s = fieldsJson;
  std::size_t i = skipSpace(s, 0);
  if (n == 0 || i >= s.size() || s[i] != '[') return out;
  i = skipSpace(s, i + 1);
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t end = skipValue(s, i);
    if (end == kBad) return out;
    if (s[i] == '"')
      if (auto v = stringValue(s.substr(i, end - i))) out[k] = std::move(*v);
    i = skipSpace(s, end);
    if (i >= s.size() || s[i] != ',') return out;
    i = skipSpace(s, i + 1);
  }
  return out;
}

namespace {

// The status map starting at s[i] ("null" or an object) split for the party; `i` moves past it.
std::optional<PartyEntries> splitAt(std::string_view s, std::size_t& i, std::string_view ownPrefix,
                                    bool ownAsTexts) {
  PartyEntries out;
  if (s.compare(i, 4, "null") == 0) {
    i += 4;
    out.ownDigest = kNoEntries;
    return out;
  }
  // The own entries' texts first: handed over as texts (`ownAsTexts`), or parsed after the walk.
  // Keys are read in place (Kubernetes names have no escape to decode): one is copied only to be
  // parsed.
  EntryTexts own;
  uint64_t digest = kNoEntries;
  std::string decoded; // the key, when its text has an escape
  std::size_t end = walkMembers(s, i, [&](std::string_view rawKey, std::size_t at) {
    if (at >= s.size() || s[at] != '{') return kBad;
    std::string_view key = rawKey;
    if (rawKey.find('\\') != std::string_view::npos) {
      auto d = decodeKey(rawKey);
      if (!d) return kBad;
      decoded = std::move(*d);
      key = decoded;
    }
    if (key.compare(0, ownPrefix.size(), ownPrefix) == 0) {
      std::size_t valueEnd = skipValue(s, at);
      if (valueEnd == kBad) return kBad;
      std::string_view value = s.substr(at, valueEnd - at);
      digest += entryDigest(key, value);
      own.emplace_back(rawKey, value);
      return valueEnd;
    }
    // Another party's entry: walked once, for its end and whether it holds a readyTime.
    bool ready = false;
    std::size_t valueEnd = walkObject(s, at, [&ready](std::string_view field, std::string_view v) {
      if (field == "readyTime" && v != "null") ready = true;
      return true;
    });
    if (valueEnd == kBad) return kBad;
    ++out.others;
    out.otherTexts.emplace_back(rawKey, s.substr(at, valueEnd - at));
    if (ready) ++out.othersReady;
    return valueEnd;
  });
  if (end == kBad) return std::nullopt;
  i = end;
  out.ownDigest = digest;
  if (ownAsTexts) {
    out.ownTexts = std::move(own);
    return out;
  }
  for (const auto& [rawKey, value] : own) {
    auto key = decodeKey(rawKey);
    json entry = parseJson(value);
    if (!key || !entry.is_object()) return std::nullopt;
    out.own[std::move(*key)] = std::move(entry);
  }
  return out;
}

} // namespace

std::optional<PartyEntries> splitEntries(std::string_view objectJson, std::string_view ownPrefix,
                                         bool ownAsTexts) {
  std::size_t i = skipSpace(objectJson, 0);
  auto out = splitAt(objectJson, i, ownPrefix, ownAsTexts);
  if (!out || skipSpace(objectJson, i) != objectJson.size()) return std::nullopt;
  return out;
}

std::optional<TaskFields> splitTaskFields(std::string_view fieldsJson, std::size_t leading,
                                          std::string_view ownPrefix, bool ownAsTexts) {
  TaskFields out;
  const std::string_view s = fieldsJson;
  std::size_t i = skipSpace(s, 0);
  if (i >= s.size() || s[i] != '[') return std::nullopt;
  auto comma = [&s, &i] {
    i = skipSpace(s, i);
    if (i >= s.size() || s[i] != ',') return false;
    i = skipSpace(s, i + 1);
    return true;
  };
  i = skipSpace(s, i + 1);
  for (std::size_t k = 0; k < leading; ++k) {
    std::size_t end = skipValue(s, i);
    if (end == kBad) return std::nullopt;
    out.leading.push_back(s.substr(i, end - i));
    i = end;
    if (!comma()) return std::nullopt;
  }
  auto p = splitAt(s, i, ownPrefix, ownAsTexts);
  if (!p || !comma()) return std::nullopt;
  auto v = splitAt(s, i, ownPrefix, ownAsTexts);
  if (!v) return std::nullopt;
  i = skipSpace(s, i);
  if (i >= s.size() || s[i] != ']' || skipSpace(s, i + 1) != s.size()) return std::nullopt;
  out.pods = std::move(*p);
  out.services = std::move(*v);
  return out;
}

uint64_t noEntriesDigest() {
  return kNoEntries;
}

uint64_t entryTextDigest(std::string_view key, std::string_view entryText) {
  return entryDigest(key, entryText);
}

std::optional<std::string> mergedEntryText(std::string_view entryText,
                                           const StatusPatch::Entry& patch) {
  // The members as (name, value text): the entry's, then the patch's over them. Buffers kept
  // for the thread's next merge (a write merges a few entries; each allocated three times else).
  thread_local std::vector<std::pair<std::string_view, std::string_view>> members;
  thread_local std::vector<StatusPatch::MemberText> set;
  thread_local std::string values; // the patch's values' texts
  members.clear();
  set.clear();
  values.clear();
  if (!entryText.empty() &&
      !forEachMember(entryText, [](std::string_view rawName, std::string_view value) {
        if (rawName.find('\\') != std::string_view::npos) return false; // the parser's to decode
        members.emplace_back(rawName, value);
        return true;
      }))
    return std::nullopt;
  patch.memberTexts(set, values);
  for (const auto& m : set) {
    const std::string_view name(m.name), value(values.data() + m.at, m.size);
    auto at = std::find_if(members.begin(), members.end(),
                           [name](const auto& member) { return member.first == name; });
    if (m.clears) {
      if (at != members.end()) members.erase(at);
    } else if (at != members.end()) {
      at->second = value;
    } else {
      members.emplace_back(name, value);
    }
  }
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  if (std::adjacent_find(members.begin(), members.end(), [](const auto& a, const auto& b) {
        return a.first == b.first;
      }) != members.end())
    return std::nullopt; // a name given twice: the parser keeps the last
  // {"name":value,...}: its size first, then each piece copied once.
  std::size_t size = members.empty() ? 2 : 1 + members.size() * 4;
  for (const auto& [name, value] : members)
    size += name.size() + value.size();
  std::string out(size, '\0');
  char* p = out.data();
  auto put = [&p](std::string_view piece) {
    std::memcpy(p, piece.data(), piece.size());
    p += piece.size();
  };
  *p++ = '{';
  for (const auto& [name, value] : members) {
    if (p != out.data() + 1) *p++ = ',';
    *p++ = '"';
    put(name);
    put("\":");
    put(value);
  }
  *p++ = '}';
  return out;
}

std::optional<std::size_t> countEntries(std::string_view objectJson) {
  std::size_t n = 0;
  if (objectJson == "null") return n;
  bool ok = forEachMember(objectJson, [&n](std::string_view /*key*/, std::string_view value) {
    ++n;
    return !value.empty() && value.front() == '{';
  });
  if (!ok) return std::nullopt;
  return n;
}

std::optional<std::vector<std::pair<std::string, std::string_view>>>
entryTextsWhere(std::string_view objectJson,
                const std::function<bool(std::string_view key)>& keep) {
  std::vector<std::pair<std::string, std::string_view>> out;
  std::size_t i = skipSpace(objectJson, 0);
  if (objectJson.compare(i, 4, "null") == 0 && skipSpace(objectJson, i + 4) == objectJson.size())
    return out;
  bool ok = forEachMember(objectJson, [&](std::string_view rawKey, std::string_view value) {
    auto key = decodeKey(rawKey);
    if (!key) return false;
    if (!keep(*key)) return true;
    if (value.empty() || value.front() != '{') return false;
    out.emplace_back(std::move(*key), value);
    return true;
  });
  if (!ok) return std::nullopt;
  return out;
}

std::optional<json> entriesWhere(std::string_view objectJson,
                                 const std::function<bool(std::string_view key)>& keep) {
  auto texts = entryTextsWhere(objectJson, keep);
  if (!texts) return std::nullopt;
  json out = json::object();
  for (auto& [key, value] : *texts) {
    json entry = parseJson(value);
    if (!entry.is_object()) return std::nullopt;
    out[key] = std::move(entry); // a key given twice: the later one, as the parser keeps it
  }
  return out;
}

std::optional<EntryFieldTexts> entryFieldTexts(std::string_view entryJson) {
  EntryFieldTexts out;
  const auto fields = model::timeline::EntryTimes::fields();
  std::string decoded; // a time's text with an escape (none that parses has one)
  bool ok = forEachMember(entryJson, [&](std::string_view rawField, std::string_view v) {
    if (rawField.find('\\') != std::string_view::npos) return false; // the parser's to decode
    if (rawField == "reasons") return false;                         // read from a DOM
    for (const char* evidence : model::timeline::kEvidenceFields)
      if (rawField == evidence) return false; // excerpts of user data: the DOM's to write
    if (rawField == "podPhase") {
      // Copied as its text: a string the serializer writes as it is.
      if (v.size() < 2 || v.front() != '"' || v.back() != '"' ||
          !needsNoEscape(v.substr(1, v.size() - 2)))
        return false;
      out.podPhase = v;
      return true;
    }
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (fields[i].first == rawField) {
        auto text = stringView(v, decoded);
        if (!text) return false; // not a string: the parser's reading decides
        out.times[i] = sdk::parseTime(*text);
      }
    return true;
  });
  if (!ok) return std::nullopt;
  return out;
}

std::optional<EntryClock> entryClockOfText(std::string_view entryJson) {
  constexpr std::array<TimeField, 4> kFields = {TimeField::kCreate, TimeField::kSchedule,
                                                TimeField::kStart, TimeField::kReady};
  static const std::array<std::string_view, kFields.size()> kNames = {
      fieldName(kFields[0]), fieldName(kFields[1]), fieldName(kFields[2]), fieldName(kFields[3])};
  EntryClock clock = EntryClock::presentEntry();
  std::array<bool, kFields.size()> seen{};
  std::string decoded; // a time's text with an escape (none that parses has one)
  bool ok = forEachMember(entryJson, [&](std::string_view rawField, std::string_view v) {
    if (rawField.find('\\') != std::string_view::npos) return false; // the parser's to decode
    for (std::size_t i = 0; i < kFields.size(); ++i) {
      if (rawField != kNames[i]) continue;
      if (seen[i]) return false; // given twice: the parser keeps the last
      seen[i] = true;
      if (v == "null") return true;
      auto text = stringView(v, decoded); // nullopt: not a string (a value, no time)
      clock.set(kFields[i], text ? sdk::parseTime(*text) : std::nullopt);
      return true;
    }
    return true;
  });
  if (!ok) return std::nullopt;
  return clock;
}

json otherEntries(std::string_view objectJson, std::string_view ownPrefix) {
  auto out = entriesWhere(objectJson, [ownPrefix](std::string_view key) {
    return key.compare(0, ownPrefix.size(), ownPrefix) != 0;
  });
  return out ? std::move(*out) : json::object();
}

std::optional<std::vector<model::timeline::EntryTimes>> entryTimesOf(const EntryTexts& entries,
                                                                     bool pods) {
  std::vector<model::timeline::EntryTimes> out;
  out.reserve(entries.size());
  std::string decoded; // a time's text with an escape (none that parses has one)
  for (const auto& [rawKey, value] : entries) {
    auto key = decodeKey(rawKey);
    if (!key) return std::nullopt;
    model::timeline::EntryTimes e;
    e.key = std::move(*key);
    e.pod = pods;
    bool entryOk =
        forEachMember(value, [&e, &decoded](std::string_view rawField, std::string_view v) {
          if (rawField.find('\\') != std::string_view::npos) return false; // the full parser's
          if (rawField == "reasons") {
            e.readReasons(parseJson(v));
            return true;
          }
          for (auto [name, member] :
               {std::pair{"reason", &model::timeline::EntryTimes::evidenceReason},
                std::pair{"message", &model::timeline::EntryTimes::evidenceMessage},
                std::pair{"terminationLog", &model::timeline::EntryTimes::terminationLog}})
            if (rawField == name) {
              auto text = stringView(v, decoded);
              if (text) e.*member = failure::excerpt(*text);
              return true;
            }
          if (const auto member = model::timeline::EntryTimes::memberNamed(rawField)) {
            auto text = stringView(v, decoded);
            e.*member = text ? sdk::parseTime(*text) : std::nullopt;
          }
          return true;
        });
    if (!entryOk) return std::nullopt;
    out.push_back(std::move(e));
  }
  return out;
}

PartyEntries splitParsedEntries(const json& map, std::string_view ownPrefix) {
  PartyEntries out;
  if (!map.is_object()) return out;
  for (const auto& [key, entry] : map.items()) {
    if (key.compare(0, ownPrefix.size(), ownPrefix) == 0) {
      out.own[key] = entry;
      continue;
    }
    ++out.others;
    if (entryHas(&entry, "readyTime")) ++out.othersReady;
  }
  return out;
}

} // namespace kuscia_host::model
