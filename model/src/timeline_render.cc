#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/timeline_render.h>
#include <kuscia_model/timeline_summary.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>

namespace kuscia_host::model::timeline {

using nlohmann::json;

namespace {

struct Column {
  const char* title;
  const char* key; // a time ("createTime") or a duration ("createToStart")
  bool duration;
};

constexpr Column kColumns[] = {
    {"CREATE", "createTime", false},         {"SCHEDULE", "scheduleTime", false},
    {"START", "startTime", false},           {"READY", "readyTime", false},
    {"CREATE>START", "createToStart", true}, {"START>READY", "startToReady", true},
    {"CREATE>READY", "createToReady", true}};

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

// HH:MM:SS of an RFC 3339 time (the date is in the header).
std::string clock(const std::string& t) {
  return t.size() >= 19 ? t.substr(11, 8) + t.substr(19, t.size() - 20) : t;
}

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

// What a pulling phase says of the pull itself: its own duration from the Pulled Event, and what
// of the phase came before it ("" for other phases, or without the Event's duration). The phase
// may come out shorter than the pull: its ends are whole seconds.
std::string pullText(const json& p) {
  if (!p.contains("pullSeconds") || !p["pullSeconds"].is_number()) return "";
  const double pull = p["pullSeconds"].get<double>();
  char own[32];
  std::snprintf(own, sizeof own, "%.3fs", pull);
  std::string out = std::string("the pull itself ") + own;
  if (p.contains("seconds") && p["seconds"].is_number()) {
    double before = p["seconds"].get<double>() - pull;
    if (before >= 0.05) out += ", " + seconds(before) + " before it";
  }
  return out;
}

// The summary of the document (computed now when the source gave none).
json summaryOf(const json& doc) {
  if (doc.contains("summary") && doc["summary"].is_object()) return doc["summary"];
  return model::timeline::summarize(doc, 0);
}

// "readiness 5.0s (ContainersNotReady: message)" of a summary phase; a pull says its own
// duration: "pulling 2.0s (the pull itself 1.600s, 0.4s before it; Pulled: ...)".
std::string phaseText(const json& p, bool withEntry) {
  std::string out = withEntry ? p.value("entry", std::string()) + " " : std::string();
  out += p.value("phase", std::string());
  if (p.contains("seconds")) out += " " + seconds(p["seconds"].get<double>());
  if (p.value("ongoing", false)) out += " so far";
  std::string why = pullText(p);
  if (p.contains("reason")) {
    why += (why.empty() ? "" : "; ") + p["reason"].get<std::string>();
    if (p.contains("message")) why += ": " + p["message"].get<std::string>();
  }
  if (!why.empty()) out += " (" + why + ")";
  return out;
}

// "failed: OOMKilled in bob (bob/t-0) at 10:05:00, cause Expired" ("failed: RouteNotReady on
// route alice-bob (HeartBeatTimeout) in bob at ..., down since 10:04:20 (observed)" for a route)
// and the excerpt below it, each of its lines indented; "" without the classification.
std::string whyText(const json& s, const char* which) {
  if (!s.contains(which) || !s[which].is_object()) return "";
  const json& c = s[which];
  const bool stuck = std::string_view(which) == "stuck";
  std::string out = stuck ? "stuck" : "failed";
  if (stuck && c.contains("seconds") && c["seconds"].is_number())
    out += " " + seconds(c["seconds"].get<double>());
  out += ": " + c.value("reason", std::string("Unknown"));
  if (c.contains("pair")) out += " on route " + c.value("pair", std::string());
  if (c.contains("routeReason")) out += " (" + c.value("routeReason", std::string()) + ")";
  if (c.contains("party")) out += " in " + c.value("party", std::string());
  if (c.contains("entry")) out += " (" + c.value("entry", std::string()) + ")";
  if (c.contains("since"))
    out += std::string(stuck ? " since " : " at ") + clock(c.value("since", std::string()));
  if (c.contains("cause")) out += ", cause " + c.value("cause", std::string());
  if (const json down = c.value("routeDown", json::object()); down.contains("since"))
    out += ", down since " + clock(down.value("since", std::string())) + " (observed)";
  out += "\n";
  std::string excerpt = c.value("excerpt", std::string());
  for (std::size_t at = 0; !excerpt.empty() && at <= excerpt.size();) {
    std::size_t nl = excerpt.find('\n', at);
    if (nl == std::string::npos) nl = excerpt.size();
    out += "  | " + excerpt.substr(at, nl - at) + "\n";
    at = nl + 1;
  }
  return out;
}

// The critical path's phases of each entry, in order.
std::map<std::string, std::vector<std::string>> criticalPhases(const json& summary) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& p : summary.value("criticalPath", json::array()))
    out[p.value("entry", std::string())].push_back(p.value("phase", std::string()));
  return out;
}

} // namespace

namespace {

// "before it, in job demo-job-1: approval 2.0s (bob accepted last), queued 1.0s (dependencies)":
// what came before the task in its job (its document's "job").
std::string beforeText(const json& job) {
  auto secondsOf = [](const json& p) {
    return p.contains("seconds") && p["seconds"].is_number() ? seconds(p["seconds"].get<double>())
                                                             : std::string("?");
  };
  std::string out = "before it, in job " + job.value("job", std::string()) + ":";
  if (job.contains("approval") && job["approval"].is_object()) {
    const json& a = job["approval"];
    out += " approval " + secondsOf(a);
    if (a.contains("party")) out += " (" + a.value("party", std::string()) + ")";
    out += ",";
  }
  const json q = job.value("queued", json::object());
  out += " queued " + secondsOf(q);
  if (q.contains("reason")) out += " (" + q.value("reason", std::string()) + ")";
  return out + "\n";
}

} // namespace

std::string renderTimelineSummary(const json& doc) {
  json s = summaryOf(doc);
  std::string out;
  const json parties = s.value("parties", json::object());
  int entries = 0, ready = 0;
  for (const auto& [name, p] : parties.items()) {
    entries += p.value("entries", 0);
    ready += p.value("readyEntries", 0);
  }
  out += whyText(s, "failure") + whyText(s, "stuck");
  if (s.value("complete", false)) {
    out += "startup " +
           (s.contains("startupSeconds") ? seconds(s["startupSeconds"].get<double>())
                                         : std::string("?")) +
           ", all ready at " + clock(s.value("allReadyTime", std::string())) + "; last party " +
           s.value("lastParty", std::string()) + "\n";
    if (s.contains("blame")) out += "blame: " + phaseText(s["blame"], true) + "\n";
  } else {
    out += "startup not complete: " + std::to_string(ready) + " of " + std::to_string(entries) +
           " entries ready\n";
    if (s.contains("blame")) out += "waiting longest: " + phaseText(s["blame"], true) + "\n";
  }
  std::string line;
  for (const auto& [name, p] : parties.items()) {
    line += line.empty() ? "parties: " : ", ";
    line += name + " ";
    if (p.contains("startupSeconds"))
      line += seconds(p["startupSeconds"].get<double>());
    else
      line += std::to_string(p.value("readyEntries", 0)) + "/" +
              std::to_string(p.value("entries", 0)) + " ready";
  }
  if (!line.empty()) out += line + "\n";
  if (s.contains("preparing") && s["preparing"].is_object())
    out += "preparing " + seconds(s["preparing"].value("seconds", 0.0)) +
           " (the task controller: ports, pre-checks, the pods, services and group created)\n";
  if (doc.contains("job") && doc["job"].is_object()) out += beforeText(doc["job"]);
  if (s.contains("criticalPath") && !s["criticalPath"].empty()) {
    out += "critical path:\n";
    for (const auto& p : s["criticalPath"])
      out += "  " + pad(p.value("entry", std::string()), 0) + " " + phaseText(p, false) + "\n";
  }
  return out;
}

json mergeTimelines(const std::vector<json>& docs) {
  json out = json::object();
  for (const auto& d : docs) {
    if (out.empty()) {
      out = d;
      continue;
    }
    out.merge_patch(d);
  }
  return out;
}

bool timelineComplete(const json& doc) {
  if (!doc.contains("entries") || doc["entries"].empty()) return false;
  for (const auto& [key, e] : doc["entries"].items())
    if (!e.value("missing", json::array()).empty()) return false;
  return true;
}

namespace {

// The slowest entry of each duration column: column key -> (seconds, entry key).
std::map<std::string, std::pair<double, std::string>> slowestEntries(const json& entries) {
  std::map<std::string, std::pair<double, std::string>> slowest;
  for (const auto& [key, e] : entries.items())
    for (const auto& c : kColumns)
      if (c.duration && e["durations"].contains(c.key)) {
        double v = e["durations"][c.key].get<double>();
        auto& s = slowest[c.key];
        if (s.second.empty() || v > s.first) s = {v, key};
      }
  return slowest;
}

// What the table's footnotes explain, as the rows found it.
struct TableMarks {
  bool skew = false;        // a negative duration
  bool unscheduled = false; // a pod without a scheduleTime
};

// One cell of an entry's row.
std::string tableCell(const Column& c, const std::string& key, const json& e, bool pod,
                      const std::map<std::string, std::pair<double, std::string>>& slowest,
                      bool several, TableMarks& marks) {
  const std::string_view name = c.key;
  if (!c.duration) {
    if (e["times"].contains(c.key)) return clock(e["times"][c.key].get<std::string>());
    if (!pod && (name == "scheduleTime" || name == "startTime")) return "";
    if (name != "scheduleTime") return "pending";
    marks.unscheduled = true;
    return "-";
  }
  if (!e["durations"].contains(c.key)) return "";
  double v = e["durations"][c.key].get<double>();
  std::string cell = seconds(v);
  if (v < 0) {
    marks.skew = true;
    return cell + "!";
  }
  auto s = slowest.find(c.key);
  if (s != slowest.end() && s->second.second == key && several) cell += "*";
  return cell;
}

// The note after an entry's row: its phases on the critical path, what it waits for.
std::string tableNote(const std::string& key, const json& e,
                      const std::map<std::string, std::vector<std::string>>& critical) {
  std::string note;
  if (auto c = critical.find(key); c != critical.end()) {
    note = "critical:";
    for (const auto& phase : c->second)
      note += " " + phase;
  }
  if (e.contains("waiting")) {
    const json& w = e["waiting"];
    note += std::string(note.empty() ? "" : "; ") + "waiting (" + w.value("phase", std::string()) +
            "): " + w.value("reason", std::string());
  }
  return note;
}

// The rows laid out in columns as wide as their widest cell.
std::string alignedRows(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], r[i].size());
  std::string out;
  for (const auto& r : rows) {
    std::string line = " ";
    for (std::size_t i = 0; i < r.size(); ++i)
      line += " " + (i < widths.size() ? pad(r[i], widths[i]) : r[i]);
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  return out;
}

} // namespace

std::string renderTimelineTable(const json& doc) {
  const json entries = doc.value("entries", json::object());
  std::string out = "task " + doc.value("task", std::string("?"));
  if (doc.contains("phase")) out += " (" + doc["phase"].get<std::string>() + ")";
  if (doc.contains("createTime")) out += ", created " + doc["createTime"].get<std::string>();
  out += "\n";
  if (entries.empty()) return out + "  no entries yet\n";
  const auto slowest = slowestEntries(entries);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ENTRY", "KIND"});
  for (const auto& c : kColumns)
    rows[0].emplace_back(c.title);
  TableMarks marks;
  const auto critical = criticalPhases(summaryOf(doc));
  for (const auto& [key, e] : entries.items()) {
    bool pod = e.value("kind", "") == "pod";
    std::vector<std::string> row = {key, pod ? "pod" : "service"};
    for (const auto& c : kColumns)
      row.push_back(tableCell(c, key, e, pod, slowest, entries.size() > 1, marks));
    if (std::string note = tableNote(key, e, critical); !note.empty()) row.push_back(note);
    rows.push_back(std::move(row));
  }
  out += alignedRows(rows);
  out += "  * the slowest entry of a phase; critical: its phases on the task's critical path";
  if (marks.skew) out += "; ! negative: the clocks that wrote these times disagree (clock skew)";
  if (marks.unscheduled) out += "; - no scheduleTime (scheduler-time not enabled)";
  out += "\n";
  return out;
}

namespace {

// The Gantt chart's time scale: columns from the first time to the last.
struct GanttScale {
  int64_t first = 0;
  double span = 0;  // seconds
  double scale = 0; // columns per second
  int width = 0;
  int col(int64_t t) const {
    return std::clamp(static_cast<int>(std::lround(static_cast<double>(t - first) / 1e9 * scale)),
                      0, width);
  }
};

// The axis: seconds from the task's creation (or the first time known), a few ticks.
std::string ganttAxis(const GanttScale& g) {
  std::string axis(static_cast<std::size_t>(g.width + 8), ' ');
  int ticks = std::max(1, std::min(4, g.width / 15));
  for (int i = 0; i <= ticks; ++i) {
    int c = g.width * i / ticks;
    char buf[32];
    std::snprintf(buf, sizeof buf, g.span >= 10 ? "%.0fs" : "%.1fs", g.span * i / ticks);
    std::string label = buf;
    int at = std::min(c, static_cast<int>(axis.size()) - static_cast<int>(label.size()));
    axis.replace(static_cast<std::size_t>(at), label.size(), label);
  }
  while (!axis.empty() && axis.back() == ' ')
    axis.pop_back();
  return axis;
}

// A phase's letter on the chart.
char phaseMark(const std::string& phase) {
  return phase == "scheduling"         ? 's'
         : phase == "reserving"        ? 'v'
         : phase == "awaiting-parties" ? 'w'
         : phase == "binding"          ? 'b'
         : phase == "accepting"        ? 'a'
         : phase == "pulling"          ? 'p'
         : phase == "starting"         ? 'c'
         : phase == "readiness"        ? 'r'
         : phase == "programming"      ? 'g'
                                       : '?';
}

// The critical path's segments of one entry: (phase, from column, to column).
using CriticalSegments = std::vector<std::tuple<std::string, int, int>>;

// One entry's bar: its phases' letters, in capitals where on the critical path.
std::string ganttBar(const std::vector<model::timeline::Phase>& list, const GanttScale& g,
                     const CriticalSegments& onPath) {
  std::string bar(static_cast<std::size_t>(g.width + 1), ' ');
  for (const auto& p : list) {
    char mark = phaseMark(p.phase);
    int from = g.col(p.from);
    int to = p.to ? g.col(*p.to) : g.width;
    for (int i = from; i < std::max(to, from + 1) && i <= g.width; ++i) {
      bool onTheWay = std::any_of(onPath.begin(), onPath.end(), [&](const auto& c) {
        return std::get<0>(c) == p.phase && i >= std::get<1>(c) &&
               i < std::max(std::get<2>(c), std::get<1>(c) + 1);
      });
      bar[static_cast<std::size_t>(i)] = onTheWay ? static_cast<char>(mark - 'a' + 'A') : mark;
    }
    if (!p.to) bar[static_cast<std::size_t>(std::min(to, g.width))] = '>';
  }
  while (!bar.empty() && bar.back() == ' ')
    bar.pop_back();
  return bar;
}

} // namespace

std::string renderTimelineGantt(const json& doc, int width) {
  const json entries = doc.value("entries", json::object());
  std::optional<int64_t> first, last;
  auto widen = [&](int64_t t) {
    first = first ? std::min(*first, t) : t;
    last = last ? std::max(*last, t) : t;
  };
  if (doc.contains("createTime") && doc["createTime"].is_string())
    if (auto taskCreate = sdk::parseTime(doc["createTime"].get<std::string>())) widen(*taskCreate);
  std::map<std::string, std::vector<model::timeline::Phase>> phases;
  for (const auto& [key, e] : entries.items()) {
    phases[key] = model::timeline::phasesOf(key, e);
    for (const auto& p : phases[key]) {
      widen(p.from);
      if (p.to) widen(*p.to);
    }
  }
  if (!first) return "  (no times yet)\n";
  GanttScale g;
  g.first = *first;
  g.span = static_cast<double>(*last - *first) / 1e9;
  g.scale = g.span > 0 ? width / g.span : 0;
  g.width = width;
  // The critical path's segments of each entry, in columns: a service's programming may be on it
  // only from the moment its pod was ready.
  std::map<std::string, CriticalSegments> critical;
  for (const auto& p : summaryOf(doc).value("criticalPath", json::array())) {
    auto from = sdk::parseTime(p.value("from", std::string()));
    auto to = sdk::parseTime(p.value("to", std::string()));
    if (from && to)
      critical[p.value("entry", std::string())].emplace_back(p.value("phase", std::string()),
                                                             g.col(*from), g.col(*to));
  }
  std::size_t labelWidth = 0;
  for (const auto& [key, e] : entries.items())
    labelWidth = std::max(labelWidth, key.size());
  std::string out = "  " + pad("", labelWidth) + " " + ganttAxis(g) + "\n";
  for (const auto& [key, list] : phases)
    out += "  " + pad(key, labelWidth) + " " + ganttBar(list, g, critical[key]) + "\n";
  out += "  s scheduling (v reserving, w awaiting-parties, b binding), a accepting, p pulling, "
         "c starting, r readiness, g programming; CAPITALS: on the critical path; > still "
         "waiting\n";
  return out;
}

} // namespace kuscia_host::model::timeline
