#include <kuscia_model/kept_facts.h>

#include <array>

namespace kuscia_host::model {

using nlohmann::json;

namespace {

constexpr int kVersion = 1;
// The last three: the pod's party's reservation (its TaskResource, deleted with the group once
// the task succeeded).
constexpr std::array<const char*, 7> kTimes = {
    "firstReadyTime", "containersStartTime", "imagePullStartTime", "imagePullEndTime",
    "reservingTime",  "reservedTime",        "schedulableTime"};

// The length of the UTF-8 sequence that starts with `lead` (1 for a stray byte).
std::size_t sequenceLength(unsigned char lead) {
  if (lead >= 0xF0 && lead < 0xF8) return 4;
  if (lead >= 0xE0) return lead < 0xF0 ? 3 : 1;
  if (lead >= 0xC0) return 2;
  return 1;
}

json reasonsWithout(const json& reasons, bool messages) {
  json out = json::object();
  for (const auto& [phase, r] : reasons.items()) {
    if (!r.is_object()) continue;
    json kept = {{"reason", boundedText(r.value("reason", ""), 64)}};
    if (messages) kept["message"] = boundedText(r.value("message", ""), kKeptMessageBytes);
    out[phase] = std::move(kept);
  }
  return out;
}

} // namespace

std::string boundedText(std::string_view text, std::size_t maxBytes) {
  static constexpr std::string_view kCut = "...";
  std::string clean; // whole sequences, no control character but newline and tab
  clean.reserve(std::min(text.size(), maxBytes + 4));
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = std::min(sequenceLength(c), text.size() - i);
    const bool control = c < 0x20 ? c != '\n' && c != '\t' : c == 0x7F;
    if (!control) clean.append(text.substr(i, n));
    i += n;
    if (clean.size() > maxBytes + 4) break; // enough to know it is cut
  }
  if (clean.size() <= maxBytes) return clean;
  if (maxBytes < kCut.size()) return std::string();
  std::size_t end = maxBytes - kCut.size(); // back to the start of a sequence
  while (end > 0 && (static_cast<unsigned char>(clean[end]) & 0xC0) == 0x80)
    --end;
  clean.resize(end);
  return clean + std::string(kCut);
}

namespace {

// The object `member` of an annotation's value; an empty object when it is none.
json keptMember(std::string_view annotation, const char* member) {
  if (annotation.empty()) return json::object();
  json doc = json::parse(annotation, nullptr, false);
  if (!doc.is_object() || doc.value("v", 0) != kVersion) return json::object();
  auto it = doc.find(member);
  return it != doc.end() && it->is_object() ? std::move(*it) : json::object();
}

} // namespace

json keptEntries(std::string_view annotation) {
  return keptMember(annotation, "entries");
}

json keptPartners(std::string_view annotation) {
  return keptMember(annotation, "partners");
}

json partnerReservations(std::string_view annotation, const json& live,
                         const std::function<bool(std::string_view party)>& holds) {
  json out = json::object();
  const json kept = keptPartners(annotation);
  for (const auto& [party, r] : kept.items())
    if (!holds(party)) out[party] = r;
  if (live.is_object()) out.update(live);
  return out;
}

json keptFactsOf(const json& facts, std::string_view createTime) {
  json out = json::object();
  if (!createTime.empty()) out["createTime"] = std::string(createTime);
  if (!facts.is_object()) return out;
  for (const char* field : kTimes)
    if (auto it = facts.find(field); it != facts.end() && it->is_string()) out[field] = *it;
  if (auto it = facts.find("reasons"); it != facts.end() && it->is_object() && !it->empty())
    out["reasons"] = reasonsWithout(*it, true);
  return out;
}

std::optional<std::string> keptFactsText(const json& entries, const json& partners) {
  json doc = {{"v", kVersion}, {"entries", entries}};
  if (partners.is_object() && !partners.empty()) doc["partners"] = partners;
  std::string text = doc.dump();
  if (text.size() <= kKeptFactsBytes) return text;
  for (auto& [key, facts] : doc["entries"].items())
    if (facts.contains("reasons")) facts["reasons"] = reasonsWithout(facts["reasons"], false);
  text = doc.dump();
  if (text.size() <= kKeptFactsBytes) return text;
  return std::nullopt;
}

std::string keptFactsPatch(const std::string& text) {
  return json{{"metadata", {{"annotations", {{kKeptFactsAnnotation, text}}}}}}.dump();
}

const json* keptFor(const json& entries, const std::string& key, const json& status) {
  auto it = entries.find(key);
  if (it == entries.end() || !it->is_object()) return nullptr;
  // Of the same incarnation: the same createTime when both know one.
  auto kept = it->find("createTime");
  auto now = status.is_object() ? status.find("createTime") : status.end();
  if (kept != it->end() && status.is_object() && now != status.end() && kept->is_string() &&
      now->is_string() && *kept != *now)
    return nullptr;
  return &*it;
}

void addKeptFacts(json& entry, const json& kept) {
  for (const auto& [field, value] : kept.items())
    if (field != "createTime" && !entry.contains(field)) entry[field] = value;
}

void applyKeptFacts(json& task) {
  if (!task.is_object()) return;
  const json meta = task.value("metadata", json::object());
  const json annotations = meta.value("annotations", json::object());
  auto value = annotations.find(kKeptFactsAnnotation);
  if (value == annotations.end() || !value->is_string()) return;
  const json entries = keptEntries(value->get_ref<const std::string&>());
  auto status = task.find("status");
  if (entries.empty() || status == task.end() || !status->is_object()) return;
  auto pods = status->find("podStatuses");
  if (pods == status->end() || !pods->is_object()) return;
  for (auto& [key, entry] : pods->items()) {
    if (const json* kept = keptFor(entries, key, entry); kept != nullptr && entry.is_object())
      addKeptFacts(entry, *kept);
  }
}

} // namespace kuscia_host::model
