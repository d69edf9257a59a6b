#include <kuscia_model/own_entries.h>

#include <algorithm>
#include <utility>

#include <kuscia_model/json_text.h>
#include <kuscia_model/kuscia.h>

namespace kuscia_host::model {

using nlohmann::json;

namespace {

// The times of an entry's text: read off the text, or off its parse when the scanner could read
// it otherwise than the parser.
EntryClock clockOfText(std::string_view text) {
  if (auto clock = entryClockOfText(text)) return *clock;
  const json entry = parseJson(text);
  return EntryClock(&entry);
}

// The first of `entries` (ordered by key) whose key is not before `key`.
template <class Entries> auto lowerBound(Entries& entries, std::string_view key) {
  return std::lower_bound(entries.begin(), entries.end(), key,
                          [](const auto& e, std::string_view k) { return e.key < k; });
}

} // namespace

std::optional<OwnEntryTexts> OwnEntryTexts::fromTexts(const EntryTexts& texts) {
  OwnEntryTexts out;
  out.entries_.reserve(texts.size());
  for (const auto& [rawKey, value] : texts) {
    auto key = decodedKey(rawKey);
    if (!key) return std::nullopt;
    out.put(std::move(*key), std::string(value));
  }
  return out;
}

OwnEntryTexts OwnEntryTexts::fromJson(const json& own) {
  OwnEntryTexts out;
  if (!own.is_object()) return out;
  out.entries_.reserve(own.size());
  for (const auto& [key, entry] : own.items())
    out.put(key, dumpJson(entry));
  return out;
}

const OwnEntryTexts::Entry* OwnEntryTexts::find(std::string_view key) const {
  // Ordered by key: a party with many pods is compared entry by entry without a walk each.
  auto at = lowerBound(entries_, key);
  return at != entries_.end() && at->key == key ? &*at : nullptr;
}

const EntryClock& OwnEntryTexts::clockOf(std::string_view key) const {
  static const EntryClock kNoEntry(nullptr);
  const Entry* e = find(key);
  return e != nullptr ? e->clock : kNoEntry;
}

void OwnEntryTexts::put(std::string key, std::string text) {
  const EntryClock clock = clockOfText(text);
  put(std::move(key), std::move(text), clock);
}

void OwnEntryTexts::put(std::string key, std::string text, const EntryClock& clock) {
  auto at = lowerBound(entries_, key);
  Entry* e = nullptr;
  if (at != entries_.end() && at->key == key) {
    e = &*at;
    digest_ -= e->digest;
  } else {
    e = &*entries_.insert(at, Entry{std::move(key), {}, 0, EntryClock(nullptr)});
  }
  e->text = std::move(text);
  e->digest = entryTextDigest(e->key, e->text);
  e->clock = clock;
  digest_ += e->digest;
}

void OwnEntryTexts::apply(const StatusPatch& patch, StatusPatch::Group group) {
  for (const StatusPatch::Entry& p : patch.entries()) {
    if (p.group != group) continue;
    const Entry* held = find(p.key);
    const std::string_view text = held != nullptr ? std::string_view(held->text) : "";
    if (auto merged = mergedEntryText(text, p)) {
      // The times the merged text holds: those held, with the patch's set or removed (a time
      // written reads back as the instant it was written from).
      EntryClock clock = held != nullptr ? held->clock : EntryClock::presentEntry();
      for (const auto& [field, nanos] : p.fields) {
        if (nanos == StatusPatch::kClear)
          clock.clear(field);
        else
          clock.set(field, nanos);
      }
      put(p.key, std::move(*merged), clock);
      continue;
    }
    // Text the scanner does not read as the parser does: merged into its parse.
    json entries = json::object();
    if (held != nullptr) {
      json entry = parseJson(held->text);
      entries[p.key] = entry.is_object() ? std::move(entry) : json::object();
    }
    StatusPatch one;
    one.add(p);
    one.applyTo(group, entries);
    put(p.key, dumpJson(entries[p.key]));
  }
}

EntryTexts OwnEntryTexts::views() const {
  EntryTexts out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_)
    out.emplace_back(e.key, e.text);
  return out;
}

json OwnEntryTexts::toJson() const {
  json out = json::object();
  for (const Entry& e : entries_)
    out[e.key] = parseJson(e.text);
  return out;
}

} // namespace kuscia_host::model
