#include "app/history_command.h"
#include "app/exit_codes.h"

#include <kuscia_host/abi.h>
#include <kuscia_host/query.hpp>

#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "app/cluster_reader.h"
#include "app/plugin_search.h"
#include "app/timeline_render.h"
#include "common/defaults.h"
#include "plugin_host/loader.h"

namespace kuscia_host {

using nlohmann::json;

namespace {

constexpr int kPageLimit = 500;
constexpr const char* kRoute = "/api/v1/history";
constexpr const char* kPlugin = "task-history";

void add(std::string& q, const std::string& key, const std::string& value) {
  if (value.empty()) return;
  q += (q.empty() ? "" : "&") + key + "=" + sdk::percentEncode(value);
}

// The message of an error answer, else the status.
std::string answerError(int status, const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string())
    return j["message"].get<std::string>();
  return "answered " + std::to_string(status);
}

// task-history.so from the plugin directories, loaded with the host's own checks.
Result<HistoryFetch> offlineSource(const HistoryOptions& o) {
  auto search = pluginSearch(o.pluginDirs, true);
  if (!search) return makeError(search.error());
  std::vector<std::string> dirs = search->extraPluginDirs;
  dirs.insert(dirs.end(), search->defaultPluginDirs.begin(), search->defaultPluginDirs.end());
  std::string path = findPluginFile(kPlugin, dirs);
  if (path.empty()) {
    std::string looked;
    for (const auto& d : dirs)
      looked += (looked.empty() ? "" : ", ") + d;
    return makeError("--db: the task-history plugin (task-history.so) is not in " + looked +
                     " (install kuscia-host-plugin-task-history, or give --plugin-dir)");
  }
  PluginLoader loader(LoaderOptions{});
  auto lib = loader.load(path, kPlugin);
  if (!lib) return makeError(lib.error());
  auto get = (*lib)->offlineGet();
  if (get == nullptr)
    return makeError(path + ": this task-history cannot be read offline (it predates ABI 1.2)");
  json config = {{"database", o.db}};
  if (!o.passwordFile.empty()) config["passwordFile"] = o.passwordFile;
  std::string configText = config.dump();
  std::shared_ptr<PluginLibrary> keep = *lib;
  return HistoryFetch(
      [keep, get, configText](const std::string& p, const std::string& query) -> Result<json> {
        struct Answer {
          int status = 0;
          std::string body;
        } answer;
        char err[1024] = {0};
        auto respond = [](void* user, int32_t status, const char* /*type*/, const char* body,
                          size_t len) {
          auto* a = static_cast<Answer*>(user);
          a->status = status;
          a->body.assign(body != nullptr ? body : "", len);
        };
        kh_status_t s = get(configText.data(), configText.size(), p.c_str(), query.c_str(), respond,
                            &answer, err, sizeof err);
        if (s != KH_OK) return makeError(std::string("task-history: ") + err);
        if (answer.status != 200) return makeError(answerError(answer.status, answer.body));
        json j = json::parse(answer.body, nullptr, false);
        if (j.is_discarded()) return makeError("task-history answered something that is not JSON");
        return j;
      });
}

std::string seconds(const json& v) {
  if (!v.is_number()) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << v.get<double>() << "s";
  return s.str();
}

std::string text(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_string() ? obj[key].get<std::string>()
                                                                      : std::string();
}

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Rows as columns padded to their widest cell.
std::string columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i)
      out += row[i] + (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 2, ' ') : "");
    out += "\n";
  }
  return out;
}

} // namespace

Result<HistoryFetch> historySource(const HistoryOptions& o) {
  if (!o.db.empty()) return offlineSource(o);
  std::string server =
      o.server.empty() ? "http://" + std::string(defaults::kAdminListen) : o.server;
  auto reader = ClusterReader::openAdmin(server, o.tokenFile, o.caFile);
  if (!reader) return makeError(reader.error());
  std::shared_ptr<ClusterReader> r = std::move(*reader);
  return HistoryFetch([r](const std::string& path, const std::string& query) {
    return r->get(query.empty() ? path : path + "?" + query);
  });
}

std::string historyQuery(const HistoryOptions& o) {
  std::string q;
  add(q, "since", o.since);
  add(q, "until", o.until);
  add(q, "party", o.party);
  add(q, "phase", o.phase);
  add(q, "blamePhase", o.blamePhase);
  add(q, "q", o.namePrefix);
  if (o.minStartupSeconds) {
    std::ostringstream s;
    s << *o.minStartupSeconds;
    add(q, "minStartupSeconds", s.str());
  }
  if (o.slowest > 0) add(q, "order", "slowest");
  return q;
}

std::string renderHistoryTable(const json& items, bool csv) {
  std::vector<std::vector<std::string>> rows = {
      {"TASK", "CREATED", "PHASE", "STARTUP", "LAST PARTY", "BLAME"}};
  for (const auto& it : items) {
    const json& s = it.value("summary", json::object());
    std::string blame;
    if (s.contains("blame") && s["blame"].is_object()) {
      const json& b = s["blame"];
      blame = text(b, "party") + " " + text(b, "phase") + " " + seconds(b.value("seconds", json()));
      if (!text(b, "reason").empty()) blame += " (" + text(b, "reason") + ")";
    }
    bool complete = s.value("complete", false);
    rows.push_back({text(it, "task"), text(it, "createTime"), text(it, "phase"),
                    complete ? seconds(s.value("startupSeconds", json())) : "not ready",
                    text(s, "lastParty"), blame});
  }
  std::ostringstream out;
  if (csv) {
    for (const auto& row : rows) {
      for (std::size_t i = 0; i < row.size(); ++i)
        out << (i > 0 ? "," : "") << csvField(row[i]);
      out << "\n";
    }
    return out.str();
  }
  out << columns(rows);
  return out.str();
}

std::string renderHistoryStats(const json& stats) {
  std::ostringstream out;
  out << "tasks created from " << text(stats, "since") << " to " << text(stats, "until") << "\n";
  std::vector<std::vector<std::string>> rows = {
      {"GROUP", "TASKS", "COMPLETE", "P50", "P90", "P99", "MOST TIME ON THE CRITICAL PATH"}};
  for (const auto& g : stats.value("groups", json::array())) {
    const json& st = g.value("startupSeconds", json::object());
    std::string top;
    double most = -1;
    const json phases = g.value("phaseSeconds", json::object());
    for (const auto& [phase, v] : phases.items())
      if (double mean = v.value("mean", 0.0); mean > most) {
        most = mean;
        top = phase + " " + seconds(v["mean"]) + " a task";
      }
    rows.push_back({text(g, "key"), std::to_string(g.value("tasks", 0)),
                    std::to_string(g.value("complete", 0)), seconds(st.value("p50", json())),
                    seconds(st.value("p90", json())), seconds(st.value("p99", json())), top});
  }
  out << columns(rows);
  return out.str();
}

int runHistory(const HistoryOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.db.empty() && !o.server.empty()) {
    err << "kuscia-host history: give --server or --db, not both\n";
    return kExitUsage;
  }
  auto fetch = historySource(o);
  if (!fetch) {
    err << "kuscia-host history: " << fetch.error() << "\n";
    return kExitFailure;
  }
  auto fail = [&](const std::string& what) {
    err << "kuscia-host history: " << what << "\n";
    return kExitFailure;
  };
  if (!o.task.empty()) {
    auto doc = (*fetch)(std::string(kRoute) + "/" + o.task, "");
    if (!doc) return fail(doc.error());
    out << (o.output == "json" ? doc->dump(2) + "\n"
                               : renderTimelineSummary(*doc) + renderTimelineTable(*doc));
    return 0;
  }
  if (o.stats) {
    std::string q;
    add(q, "since", o.since.empty() ? "30d" : o.since);
    add(q, "until", o.until);
    add(q, "groupBy", o.groupBy);
    auto stats = (*fetch)(std::string(kRoute) + "/stats", q);
    if (!stats) return fail(stats.error());
    out << (o.output == "json" ? stats->dump(2) + "\n" : renderHistoryStats(*stats));
    return 0;
  }
  // Pages until the limit (or the N slowest, one page).
  int want = o.slowest > 0 ? o.slowest : o.limit;
  json items = json::array();
  std::string next;
  do {
    std::string q = historyQuery(o);
    add(q, "limit", std::to_string(std::min(kPageLimit, want - int(items.size()))));
    add(q, "continue", next);
    auto page = (*fetch)(kRoute, q);
    if (!page) return fail(page.error());
    for (auto& it : page->value("items", json::array()))
      items.push_back(std::move(it));
    next = o.slowest > 0 ? "" : page->value("continue", "");
  } while (!next.empty() && int(items.size()) < want);
  if (o.output == "json")
    out << items.dump(2) << "\n";
  else
    out << renderHistoryTable(items, o.output == "csv");
  return 0;
}

} // namespace kuscia_host
