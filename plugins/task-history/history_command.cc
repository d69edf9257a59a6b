#include "history_command.h"

#include <kuscia_host/query.hpp>
#include <kuscia_model/job_view.h>
#include <kuscia_model/json_member.h>
#include <kuscia_model/timeline_render.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <optional>
#include <sstream>

#include "task_history.h"

namespace kuscia_host::plugins::history {

using nlohmann::json;

namespace {

constexpr int kPageLimit = 500;
constexpr const char* kRoute = "/api/v1/history";
// Where a host's admin server listens by default.
constexpr const char* kDefaultServer = "http://127.0.0.1:9464";

struct Options {
  std::string task; // one task's stored timeline instead of the list
  std::string job;  // one job's view instead
  bool stats = false;
  std::string groupBy; // with stats: party, blamePhase, reason or day
  std::string since = "7d", until, party, phase, blamePhase, reason, namePrefix;
  std::optional<double> minStartupSeconds;
  int slowest = 0;              // the N slowest complete tasks instead of the newest
  int limit = 50;               // tasks listed (pages of at most 500 are fetched until then)
  std::string output = "table"; // table, json or csv (the list); table or json otherwise
  std::string server, tokenFile, caFile; // a host's admin server
  std::string db, passwordFile;          // or the database itself
};

// GET `path` with `query` from where the options point: the JSON answer (throws with the error).
using Fetch = std::function<json(const std::string& path, const std::string& query)>;

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

// The database itself, through the routes the admin server serves (TaskHistory::serveOffline).
Fetch offlineSource(const Options& o) {
  json config = {{"database", o.db}};
  if (!o.passwordFile.empty()) config["passwordFile"] = o.passwordFile;
  return [configText = config.dump()](const std::string& path, const std::string& query) {
    sdk::HttpResponse answer;
    TaskHistory::serveOffline(configText, sdk::HttpRequest{"GET", path, query}, answer);
    if (answer.status != 200) throw std::runtime_error(answerError(answer.status, answer.body));
    json j = json::parse(answer.body, nullptr, false);
    if (j.is_discarded())
      throw std::runtime_error("task-history answered something that is not JSON");
    return j;
  };
}

Fetch source(const sdk::CommandEnv& env, const Options& o) {
  if (!o.db.empty()) return offlineSource(o);
  int32_t reader =
      env.openAdmin(o.server.empty() ? kDefaultServer : o.server, o.tokenFile, o.caFile);
  return [&env, reader](const std::string& path, const std::string& query) {
    return json::parse(env.get(reader, query.empty() ? path : path + "?" + query));
  };
}

std::string listQuery(const Options& o) {
  std::string q;
  add(q, "since", o.since);
  add(q, "until", o.until);
  add(q, "party", o.party);
  add(q, "phase", o.phase);
  add(q, "blamePhase", o.blamePhase);
  add(q, "reason", o.reason);
  add(q, "q", o.namePrefix);
  if (o.minStartupSeconds) {
    std::ostringstream s;
    s << *o.minStartupSeconds;
    add(q, "minStartupSeconds", s.str());
  }
  if (o.slowest > 0) add(q, "order", "slowest");
  return q;
}

std::string seconds(const json& v) {
  if (!v.is_number()) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << v.get<double>() << "s";
  return s.str();
}

using model::textOf;

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

// Pages until the limit (or the N slowest, one page).
json listTasks(const Options& o, const Fetch& fetch) {
  int want = o.slowest > 0 ? o.slowest : o.limit;
  json items = json::array();
  std::string next;
  do {
    std::string q = listQuery(o);
    add(q, "limit", std::to_string(std::min(kPageLimit, want - int(items.size()))));
    add(q, "continue", next);
    json page = fetch(kRoute, q);
    for (auto& it : page.value("items", json::array()))
      items.push_back(std::move(it));
    next = o.slowest > 0 ? "" : page.value("continue", "");
  } while (!next.empty() && int(items.size()) < want);
  return items;
}

std::string answer(const Options& o, const Fetch& fetch) {
  if (!o.job.empty()) {
    json doc = fetch(std::string(kRoute) + "/jobs/" + o.job, "");
    return o.output == "json" ? doc.dump(2) + "\n" : model::job::renderJob(doc);
  }
  if (!o.task.empty()) {
    json doc = fetch(std::string(kRoute) + "/" + o.task, "");
    return o.output == "json" ? doc.dump(2) + "\n"
                              : model::timeline::renderTimelineSummary(doc) +
                                    model::timeline::renderTimelineTable(doc);
  }
  if (o.stats) {
    std::string q;
    add(q, "since", o.since.empty() ? "30d" : o.since);
    add(q, "until", o.until);
    add(q, "groupBy", o.groupBy);
    json stats = fetch(std::string(kRoute) + "/stats", q);
    return o.output == "json" ? stats.dump(2) + "\n" : renderHistoryStats(stats);
  }
  json items = listTasks(o, fetch);
  return o.output == "json" ? items.dump(2) + "\n" : renderHistoryTable(items, o.output == "csv");
}

void declareSources(CLI::App& app, Options& o) {
  auto* server = app.add_option("--server", o.server,
                                std::string("A kuscia-host's admin server (http(s)://HOST:PORT; "
                                            "default ") +
                                    kDefaultServer + ")");
  app.add_option("--db", o.db,
                 "Read the database itself instead: a SQLite file or a postgresql:// URI")
      ->excludes(server);
  app.add_option("--password-file", o.passwordFile,
                 "With --db postgresql://...: a file holding the password")
      ->check(CLI::ExistingFile);
  app.add_option("--token-file", o.tokenFile,
                 "With --server https://...: a file holding the bearer token to send")
      ->check(CLI::ExistingFile);
  app.add_option("--ca-file", o.caFile,
                 "With --server https://...: the CA (PEM) to verify its certificate with")
      ->check(CLI::ExistingFile);
}

void declare(CLI::App& app, Options& o) {
  auto* task = app.add_option("task", o.task, "One task's stored timeline instead of the list");
  app.add_option("--job", o.job,
                 "One KusciaJob's view instead, from the job and its tasks as recorded: its "
                 "approval, each task's wait in the job's queue, startup and running time")
      ->excludes(task);
  declareSources(app, o);
  app.add_option("--since", o.since,
                 "Tasks created since: RFC 3339, or a duration back from now (90m, 12h, 7d)")
      ->capture_default_str();
  app.add_option("--until", o.until, "Tasks created before (as --since)");
  app.add_option("--party", o.party, "Tasks this party (domain) took part in");
  app.add_option("--phase", o.phase, "Tasks in this phase (Running, Succeeded, Failed...)");
  app.add_option("--blame-phase", o.blamePhase,
                 "Tasks whose blamed critical-path phase is this (pulling, scheduling...)");
  app.add_option("--reason", o.reason,
                 "Tasks that failed or are stuck for this reason (Misconfigured, RouteNotReady, "
                 "ResourceShortage, ApprovalRejected, ImagePull, Unschedulable, "
                 "ReservationFailed, OOMKilled, PeerNetwork, Crashed, NotReady, PartnerFailed, "
                 "Expired, Unknown)");
  app.add_option("--min-startup", o.minStartupSeconds,
                 "Tasks that took at least this many seconds to start");
  app.add_option("--name-prefix", o.namePrefix, "Tasks whose name starts so");
  app.add_option("--slowest", o.slowest, "The N slowest complete tasks instead of the newest")
      ->check(CLI::Range(1, 500));
  app.add_option("--limit", o.limit, "At most this many tasks")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_flag("--stats", o.stats,
               "Count, p50/p90/p99 of startup and seconds per critical-path phase (default "
               "--since 30d with --stats)");
  app.add_option("--group-by", o.groupBy, "With --stats: party, blamePhase, reason or day")
      ->check(CLI::IsMember({"party", "blamePhase", "reason", "day"}));
  app.add_option("-o,--output", o.output, "table, json or csv")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json", "csv"}));
}

} // namespace

std::string renderHistoryTable(const json& items, bool csv) {
  std::vector<std::vector<std::string>> rows = {
      {"TASK", "CREATED", "PHASE", "STARTUP", "LAST PARTY", "BLAME", "WHY"}};
  for (const auto& it : items) {
    const json& s = it.value("summary", json::object());
    std::string blame;
    if (s.contains("blame") && s["blame"].is_object()) {
      const json& b = s["blame"];
      blame =
          textOf(b, "party") + " " + textOf(b, "phase") + " " + seconds(b.value("seconds", json()));
      std::string why = textOf(b, "reason");
      if (b.contains("pullSeconds") && b["pullSeconds"].is_number()) {
        char pull[40];
        std::snprintf(pull, sizeof pull, "pull %.3fs", b["pullSeconds"].get<double>());
        why = pull + (why.empty() ? "" : "; " + why);
      }
      if (!why.empty()) blame += " (" + why + ")";
    }
    // Why it failed or is stuck: the reason and its party (the excerpt is in the task's view).
    std::string why;
    for (const char* which : {"failure", "stuck"})
      if (s.contains(which) && s[which].is_object() && why.empty()) {
        why = std::string(which == std::string("stuck") ? "stuck: " : "failed: ") +
              textOf(s[which], "reason");
        if (std::string party = textOf(s[which], "party"); !party.empty()) why += " in " + party;
      }
    bool complete = s.value("complete", false);
    rows.push_back({textOf(it, "task"), textOf(it, "createTime"), textOf(it, "phase"),
                    complete ? seconds(s.value("startupSeconds", json())) : "not ready",
                    textOf(s, "lastParty"), blame, why});
  }
  if (!csv) return columns(rows);
  std::ostringstream out;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i)
      out << (i > 0 ? "," : "") << csvField(row[i]);
    out << "\n";
  }
  return out.str();
}

std::string renderHistoryStats(const json& stats) {
  std::ostringstream out;
  out << "tasks created from " << textOf(stats, "since") << " to " << textOf(stats, "until")
      << "\n";
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
    rows.push_back({textOf(g, "key"), std::to_string(g.value("tasks", 0)),
                    std::to_string(g.value("complete", 0)), seconds(st.value("p50", json())),
                    seconds(st.value("p90", json())), seconds(st.value("p99", json())), top});
  }
  out << columns(rows);
  return out.str();
}

int runHistoryCommand(const sdk::CommandEnv& env, const std::vector<std::string>& args) {
  CLI::App app("The tasks the task-history plugin recorded, also after they were deleted: the "
               "newest (or the slowest) with their startup and blame, one task's stored timeline, "
               "or startup percentiles by party, blamed phase or day",
               "kuscia-host history");
  Options o;
  declare(app, o);
  if (auto code = sdk::parseArgs<CLI::ParseError>(app, env, args)) return *code;
  if (o.stats && app.count("--since") == 0) o.since = "30d";
  try {
    env.out(answer(o, source(env, o)));
    return 0;
  } catch (const std::exception& e) {
    env.err(std::string("kuscia-host history: ") + e.what() + "\n");
    return 1;
  }
}

} // namespace kuscia_host::plugins::history
