#include "app/timeline_render.h"

#include <kuscia_host/kube_text.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

namespace kuscia_host {

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

std::optional<int64_t> timeOf(const json& e, const char* field) {
  if (!e.contains("times") || !e["times"].contains(field)) return std::nullopt;
  return sdk::parseTime(e["times"][field].get<std::string>());
}

} // namespace

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

std::string renderTimelineTable(const json& doc) {
  const json entries = doc.value("entries", json::object());
  std::string out = "task " + doc.value("task", std::string("?"));
  if (doc.contains("phase")) out += " (" + doc["phase"].get<std::string>() + ")";
  if (doc.contains("createTime")) out += ", created " + doc["createTime"].get<std::string>();
  out += "\n";
  if (entries.empty()) return out + "  no entries yet\n";
  // The slowest entry of each duration column.
  std::map<std::string, std::pair<double, std::string>> slowest;
  for (const auto& [key, e] : entries.items())
    for (const auto& c : kColumns)
      if (c.duration && e["durations"].contains(c.key)) {
        double v = e["durations"][c.key].get<double>();
        auto& s = slowest[c.key];
        if (s.second.empty() || v > s.first) s = {v, key};
      }
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ENTRY", "KIND"});
  for (const auto& c : kColumns)
    rows[0].emplace_back(c.title);
  bool skew = false, unscheduled = false;
  for (const auto& [key, e] : entries.items()) {
    bool pod = e.value("kind", "") == "pod";
    std::vector<std::string> row = {key, pod ? "pod" : "service"};
    for (const auto& c : kColumns) {
      std::string cell;
      if (!c.duration) {
        if (e["times"].contains(c.key))
          cell = clock(e["times"][c.key].get<std::string>());
        else if (!pod && (std::string_view(c.key) == "scheduleTime" ||
                          std::string_view(c.key) == "startTime"))
          cell = "";
        else if (std::string_view(c.key) == "scheduleTime") {
          cell = "-";
          unscheduled = true;
        } else
          cell = "pending";
      } else if (e["durations"].contains(c.key)) {
        double v = e["durations"][c.key].get<double>();
        cell = seconds(v);
        if (v < 0) {
          cell += "!";
          skew = true;
        } else if (slowest[c.key].second == key && entries.size() > 1) {
          cell += "*";
        }
      }
      row.push_back(cell);
    }
    if (e.contains("waiting")) {
      const json& w = e["waiting"];
      row.push_back("waiting (" + w.value("phase", std::string()) +
                    "): " + w.value("reason", std::string()));
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], r[i].size());
  for (const auto& r : rows) {
    std::string line = " ";
    for (std::size_t i = 0; i < r.size(); ++i)
      line += " " + (i < widths.size() ? pad(r[i], widths[i]) : r[i]);
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  out += "  * the slowest entry of a phase";
  if (skew) out += "; ! negative: the clocks that wrote these times disagree (clock skew)";
  if (unscheduled) out += "; - no scheduleTime (scheduler-time not enabled)";
  out += "\n";
  return out;
}

std::string renderTimelineGantt(const json& doc, int width) {
  const json entries = doc.value("entries", json::object());
  std::optional<int64_t> first, last;
  for (const auto& [key, e] : entries.items())
    for (const char* f : {"createTime", "scheduleTime", "startTime", "readyTime"})
      if (auto t = timeOf(e, f)) {
        first = first ? std::min(*first, *t) : *t;
        last = last ? std::max(*last, *t) : *t;
      }
  if (!first) return "  (no times yet)\n";
  double span = static_cast<double>(*last - *first) / 1e9;
  double scale = span > 0 ? width / span : 0; // columns per second
  auto col = [&](int64_t t) {
    return static_cast<int>(std::lround(static_cast<double>(t - *first) / 1e9 * scale));
  };
  std::size_t labelWidth = 0;
  for (const auto& [key, e] : entries.items())
    labelWidth = std::max(labelWidth, key.size());
  std::string out = "  " + pad("", labelWidth) + " 0s" + std::string(std::max(0, width - 5), ' ') +
                    seconds(span) + "\n";
  for (const auto& [key, e] : entries.items()) {
    std::string bar(static_cast<std::size_t>(width + 1), ' ');
    bool pod = e.value("kind", "") == "pod";
    // Phases in order, each drawn with its own mark up to the next known time.
    std::vector<std::pair<const char*, char>> phases =
        pod ? std::vector<std::pair<const char*, char>>{{"createTime", 's'},
                                                        {"scheduleTime", '-'},
                                                        {"startTime", '='},
                                                        {"readyTime", '|'}}
            : std::vector<std::pair<const char*, char>>{{"createTime", '~'}, {"readyTime", '|'}};
    std::optional<int> from;
    char mark = ' ';
    for (const auto& [field, m] : phases) {
      auto t = timeOf(e, field);
      if (!t) continue;
      int c = std::clamp(col(*t), 0, width);
      if (from)
        for (int i = *from; i < c; ++i)
          bar[static_cast<std::size_t>(i)] = mark;
      from = c;
      mark = m;
    }
    if (from) bar[static_cast<std::size_t>(*from)] = mark == '|' ? '|' : '>';
    while (!bar.empty() && bar.back() == ' ')
      bar.pop_back();
    out += "  " + pad(key, labelWidth) + " " + bar + "\n";
  }
  out += "  pods: s created, - scheduled, = started, | ready; services: ~ created, | ready; "
         "> still waiting\n";
  return out;
}

} // namespace kuscia_host
