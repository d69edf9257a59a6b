#include "apiserver/table.h"

#include <kuscia_host/kube_text.hpp>

namespace kuscia_host::apiserver {

using nlohmann::json;

namespace {

struct Column {
  std::string name;
  std::string type; // string, integer, date
  int priority = 0;
};

json columnDefinitions(const std::vector<Column>& cols) {
  json out = json::array();
  for (const auto& c : cols)
    out.push_back({{"name", c.name},
                   {"type", c.type == "date" ? "string" : c.type},
                   {"format", c.name == "Name" ? "name" : ""},
                   {"description", ""},
                   {"priority", c.priority}});
  return out;
}

// The age of an RFC 3339 time, "<unknown>" when there is none.
std::string age(const json& time, int64_t nowNanos) {
  if (!time.is_string()) return "<unknown>";
  auto t = sdk::parseTime(time.get<std::string>());
  if (!t) return "<unknown>";
  return humanDuration((nowNanos - *t) / 1000000000);
}

// A ".a.b.c" JSONPath (what printer columns use) into `o`; null when absent.
json lookup(const json& o, const std::string& path) {
  const json* cur = &o;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] != '.' || !cur->is_object()) return nullptr;
    std::size_t next = path.find('.', i + 1);
    std::string key = path.substr(i + 1, next == std::string::npos ? next : next - i - 1);
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    i = next == std::string::npos ? path.size() : next;
  }
  return *cur;
}

std::vector<json> podCells(const json& p, int64_t now) {
  const json& status = p.value("status", json::object());
  const json containers = p.value("spec", json::object()).value("containers", json::array());
  const json statuses = status.value("containerStatuses", json::array());
  int ready = 0;
  int restarts = 0;
  std::string reason = status.value("reason", status.value("phase", std::string("Unknown")));
  for (const auto& c : statuses) {
    ready += c.value("ready", false) ? 1 : 0;
    restarts += c.value("restartCount", 0);
    if (c.contains("state") && c["state"].contains("waiting") &&
        c["state"]["waiting"].contains("reason"))
      reason = c["state"]["waiting"]["reason"].get<std::string>();
  }
  const json& meta = p.value("metadata", json::object());
  return {meta.value("name", ""),
          std::to_string(ready) + "/" + std::to_string(containers.size()),
          reason,
          restarts,
          age(meta.value("creationTimestamp", json()), now),
          status.value("podIP", std::string("<none>")),
          p.value("spec", json::object()).value("nodeName", std::string("<none>"))};
}

std::vector<json> serviceCells(const json& s, int64_t now) {
  const json& spec = s.value("spec", json::object());
  std::string ports;
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) of overlap in the chain
  // of operator+ on temporaries.
  for (const auto& p : spec.value("ports", json::array())) {
    if (!ports.empty()) ports += ',';
    ports += std::to_string(p.value("port", 0));
    ports += '/';
    ports += p.value("protocol", std::string("TCP"));
  }
  const json& meta = s.value("metadata", json::object());
  return {meta.value("name", ""),
          spec.value("type", std::string("ClusterIP")),
          spec.value("clusterIP", std::string("<none>")),
          "<none>",
          ports.empty() ? "<none>" : ports,
          age(meta.value("creationTimestamp", json()), now)};
}

} // namespace

bool wantsTable(const std::string& accept) {
  return accept.find("as=Table") != std::string::npos;
}

std::string humanDuration(int64_t s) {
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  if (s < 120) return std::to_string(s) + "s";
  int64_t m = s / 60;
  if (m < 10)
    return s % 60 == 0 ? std::to_string(m) + "m"
                       : std::to_string(m) + "m" + std::to_string(s % 60) + "s";
  if (m < 180) return std::to_string(m) + "m";
  int64_t h = s / 3600;
  constexpr int64_t kDay = 24, kYear = kDay * 365;
  if (h < 8)
    return h * 60 == m ? std::to_string(h) + "h"
                       : std::to_string(h) + "h" + std::to_string(m % 60) + "m";
  if (h < 48) return std::to_string(h) + "h";
  if (h < kDay * 8)
    return h % 24 == 0 ? std::to_string(h / 24) + "d"
                       : std::to_string(h / 24) + "d" + std::to_string(h % 24) + "h";
  if (h < kYear * 2) return std::to_string(h / 24) + "d";
  if (h < kYear * 8)
    return std::to_string(h / 24 / 365) + "y" + std::to_string((h / 24) % 365) + "d";
  return std::to_string(h / 24 / 365) + "y";
}

json toTable(const ResourceInfo& r, const std::vector<json>& objects, const std::string& rv,
             int64_t now) {
  std::vector<Column> cols;
  if (r.kind == "Pod") {
    cols = {{"Name", "string"}, {"Ready", "string"}, {"Status", "string"}, {"Restarts", "integer"},
            {"Age", "string"},  {"IP", "string", 1}, {"Node", "string", 1}};
  } else if (r.kind == "Service") {
    cols = {{"Name", "string"},        {"Type", "string"},    {"Cluster-IP", "string"},
            {"External-IP", "string"}, {"Port(s)", "string"}, {"Age", "string"}};
  } else if (!r.printerColumns.empty()) {
    cols.push_back({"Name", "string"});
    for (const auto& c : r.printerColumns)
      cols.push_back({c.name, c.type});
  } else {
    cols = {{"Name", "string"}, {"Age", "string"}};
  }
  json rows = json::array();
  for (const auto& o : objects) {
    std::vector<json> cells;
    if (r.kind == "Pod") {
      cells = podCells(o, now);
    } else if (r.kind == "Service") {
      cells = serviceCells(o, now);
    } else if (!r.printerColumns.empty()) {
      cells.emplace_back(o["metadata"].value("name", ""));
      for (const auto& c : r.printerColumns) {
        json v = lookup(o, c.jsonPath);
        cells.push_back(c.type == "date" ? json(v.is_null() ? "" : age(v, now)) : v);
      }
    } else {
      cells = {o["metadata"].value("name", ""),
               age(o["metadata"].value("creationTimestamp", json()), now)};
    }
    json meta = o.value("metadata", json::object());
    meta.erase("managedFields");
    rows.push_back({{"cells", cells},
                    {"object",
                     {{"kind", "PartialObjectMetadata"},
                      {"apiVersion", "meta.k8s.io/v1"},
                      {"metadata", meta}}}});
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", {{"resourceVersion", rv}}},
          {"columnDefinitions", columnDefinitions(cols)},
          {"rows", rows}};
}

std::string tableWatchLine(const ResourceInfo& r, const std::string& line, bool& first,
                           int64_t nowNanos) {
  json e = json::parse(line, nullptr, false);
  if (e.is_discarded() || !e.contains("object") || !e["object"].is_object()) return line;
  std::string type = e.value("type", "");
  if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") return line;
  const json& obj = e["object"];
  std::string rv = obj.contains("metadata") ? obj["metadata"].value("resourceVersion", "") : "";
  json table = toTable(r, {obj}, rv, nowNanos);
  if (!first) table["columnDefinitions"] = json::array();
  first = false;
  return json{{"type", type}, {"object", table}}.dump() + "\n";
}

} // namespace kuscia_host::apiserver
