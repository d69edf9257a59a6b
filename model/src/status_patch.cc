#include <kuscia_model/status_patch.h>

#include <algorithm>
#include <array>
#include <tuple>

#include <kuscia_model/json_text.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_time.h>

namespace kuscia_host::model {

using nlohmann::json;

namespace {

// An entry's members in the order dump() writes them (sorted by name): each is a time field or
// one of the identifying fields of a new entry.
enum class Member : uint8_t { kTime, kNamespace, kPodName, kPodPhase, kServiceName };
struct MemberName {
  const char* name;
  Member kind;
  TimeField time; // kind kTime
};
constexpr std::array<MemberName, 8> kMembers = {{
    {"createTime", Member::kTime, TimeField::kCreate},
    {"namespace", Member::kNamespace, TimeField::kCreate},
    {"podName", Member::kPodName, TimeField::kCreate},
    {"podPhase", Member::kPodPhase, TimeField::kCreate},
    {"readyTime", Member::kTime, TimeField::kReady},
    {"scheduleTime", Member::kTime, TimeField::kSchedule},
    {"serviceName", Member::kServiceName, TimeField::kCreate},
    {"startTime", Member::kTime, TimeField::kStart},
}};

std::string_view podPhaseOf(const StatusPatch::Entry& e) {
  return e.podPhase.empty() ? std::string_view("Pending") : std::string_view(e.podPhase);
}

// Walks the entry's members in dump()'s order: `identity(name, text)` for each identifying
// member of a new entry, `time(name, instant)` for each time field (kClear: null).
template <class Identity, class Time>
void forEachMember(const StatusPatch::Entry& e, Identity&& identity, Time&& time) {
  const bool pod = e.group == StatusPatch::kPods;
  for (const MemberName& m : kMembers) {
    switch (m.kind) {
    case Member::kTime:
      for (const auto& f : e.fields)
        if (f.name == m.time) time(m.name, f.nanos);
      break;
    case Member::kNamespace:
      if (e.identify) identity(m.name, namespaceOf(e.key));
      break;
    case Member::kPodName:
      if (e.identify && pod) identity(m.name, nameOf(e.key));
      break;
    case Member::kPodPhase:
      if (e.identify && pod) identity(m.name, podPhaseOf(e));
      break;
    case Member::kServiceName:
      if (e.identify && !pod) identity(m.name, nameOf(e.key));
      break;
    }
  }
}

// A time as a JSON string: the instant in the canonical form of what was read (kAsGiven).
void appendQuotedTime(std::string& out, int64_t nanos) {
  char text[48];
  out += '"';
  out.append(text, sdk::formatTimeTo(text, nanos, TimePrecision::kAsGiven));
  out += '"';
}

} // namespace

const char* fieldName(TimeField field) {
  switch (field) {
  case TimeField::kCreate: return "createTime";
  case TimeField::kSchedule: return "scheduleTime";
  case TimeField::kStart: return "startTime";
  case TimeField::kReady: return "readyTime";
  }
  return "";
}

const char* StatusPatch::groupName(Group group) {
  return group == kPods ? "podStatuses" : "serviceStatuses";
}

void StatusPatch::Entry::set(TimeField name, int64_t nanos) {
  for (auto& f : fields)
    if (f.name == name) {
      f.nanos = nanos;
      return;
    }
  fields.push_back({name, nanos});
}

std::optional<int64_t> StatusPatch::Entry::time(TimeField name) const {
  for (const auto& f : fields)
    if (f.name == name && f.nanos != kClear) return f.nanos;
  return std::nullopt;
}

void StatusPatch::add(Entry entry) {
  auto before = [](const Entry& a, const Entry& b) {
    return std::tie(a.group, a.key) < std::tie(b.group, b.key);
  };
  // Entries come in order (a plugin walks its objects' sorted keys): at the end, mostly.
  auto at = std::lower_bound(entries_.begin(), entries_.end(), entry, before);
  if (at != entries_.end() && at->group == entry.group && at->key == entry.key)
    *at = std::move(entry);
  else
    entries_.insert(at, std::move(entry));
}

void StatusPatch::Entry::memberTexts(std::vector<MemberText>& out, std::string& values) const {
  forEachMember(
      *this,
      [&](const char* n, std::string_view text) {
        const std::size_t at = values.size();
        appendJsonString(values, text);
        out.push_back({n, at, values.size() - at});
      },
      [&](const char* n, int64_t nanos) {
        if (nanos == kClear) {
          out.push_back({n, 0, 0, true});
          return;
        }
        const std::size_t at = values.size();
        appendQuotedTime(values, nanos);
        out.push_back({n, at, values.size() - at});
      });
}

bool StatusPatch::touches(Group group) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [group](const Entry& e) { return e.group == group; });
}

void StatusPatch::appendJson(std::string& out) const {
  out += '{';
  auto e = entries_.begin();
  bool firstGroup = true;
  for (Group group : {kPods, kServices}) {
    if (e == entries_.end() || e->group != group) continue;
    if (!firstGroup) out += ',';
    firstGroup = false;
    out += '"';
    out += groupName(group);
    out += "\":{";
    for (bool firstEntry = true; e != entries_.end() && e->group == group; ++e) {
      if (!firstEntry) out += ',';
      firstEntry = false;
      appendJsonString(out, e->key);
      out += ":{";
      bool firstMember = true;
      auto name = [&](const char* n) {
        if (!firstMember) out += ',';
        firstMember = false;
        out += '"';
        out += n;
        out += "\":";
      };
      forEachMember(
          *e,
          [&](const char* n, std::string_view text) {
            name(n);
            appendJsonString(out, text);
          },
          [&](const char* n, int64_t nanos) {
            name(n);
            if (nanos == kClear)
              out += "null";
            else
              appendQuotedTime(out, nanos);
          });
      out += '}';
    }
    out += '}';
  }
  out += '}';
}

json StatusPatch::toJson() const {
  json status = json::object();
  for (const Entry& e : entries_) {
    json& entry = status[groupName(e.group)][e.key];
    entry = json::object();
    forEachMember(
        e, [&entry](const char* n, std::string_view text) { entry[n] = text; },
        [&entry](const char* n, int64_t nanos) {
          entry[n] = nanos == kClear ? json() : json(formatTime(nanos, TimePrecision::kAsGiven));
        });
  }
  return status;
}

void StatusPatch::applyTo(Group group, json& entries) const {
  if (!entries.is_object()) entries = json::object();
  for (const Entry& e : entries_) {
    if (e.group != group) continue;
    json& entry = entries[e.key];
    if (!entry.is_object()) entry = json::object();
    forEachMember(
        e, [&entry](const char* n, std::string_view text) { entry[n] = text; },
        [&entry](const char* n, int64_t nanos) {
          if (nanos == kClear)
            entry.erase(n);
          else
            entry[n] = formatTime(nanos, TimePrecision::kAsGiven);
        });
  }
}

} // namespace kuscia_host::model
