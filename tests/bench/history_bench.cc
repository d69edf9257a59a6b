// B8: task-history's reads at a million recorded tasks, SQLite and PostgreSQL side by side.
//
// Each database gets N recorded two-party tasks (default 1,000,000, spread over 90 days, the
// default retention): one task recorded through the store as the plugin records it (both parties'
// recordings, merged and summarised), then copied N times straight into the tables by SQL, each
// copy with its own name, creation, phase, startup and blame (the columns the queries filter and
// aggregate on). PostgreSQL is a real server this bench starts (initdb in a temporary
// directory). Then, through the admin API's own code (serveHistory), with the database warm:
//  - history pages under every filter, at random depths (keyset `continue`): p50 and p99, target
//    p99 at most 20 ms;
//  - one task's document: p99, target 5 ms;
//  - stats over the last 30 days, each grouping: the slowest, target 500 ms;
//  - bytes per task on disk.
// Before that, on an empty database of its own, what recording costs the writer: R two-party tasks
// recorded as a host records them (each party's first recording, then each party's recording
// again with a later readyTime, merged into the stored one), the bench's CPU and wall time per
// recording (PostgreSQL's own CPU is its server's, not counted). task-history's recording target is
// the host's CPU per task (L1 with task-history, timeline_bench); this is the writer's part of it.
// Not a test: it prints figures against their targets (docs/development/benchmarks.md, B8).
//
// usage: history_bench [--tasks N] [--queries Q] [--recordings R] [--db sqlite|postgresql|both]
// (--tasks 0: only the recordings; --recordings 0: none)
#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/timeline.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "history_api.h"
#include "history_store.h"
#include "postgres_server.h"
#include "sql_db.h"

using namespace kuscia_host::plugins::history;
using nlohmann::json;
namespace sdk = kuscia_host::sdk;

namespace {

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kDay = 86400 * kSecond;
constexpr int64_t kSpan = 90 * kDay;
constexpr std::size_t kChunk = 100000;

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t wallNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The template task as the plugin records it: both parties, each with a pod (its image pull and
// a reason) and a service, recorded by each party, queued as text with its entries' times
// (TimelineText), as DomainPods::documentText makes it.
// `name` and `readySecond` vary it: another task, a later readyTime for the recorder's pod.
Recording templateRecording(const std::string& recorder, int64_t created,
                            const std::string& name = "bench-template", int readySecond = 9) {
  auto t = [&](int s) {
    return sdk::formatTime(created + s * kSecond, sdk::TimePrecision::kAsGiven);
  };
  json pods = json::object(), services = json::object();
  for (const char* party : {"alice", "bob"}) {
    std::string pod = std::string(party) + "/bench-template-0";
    int ready = recorder == party ? readySecond : 9;
    json times = {
        {"createTime", t(0)}, {"scheduleTime", t(1)}, {"startTime", t(2)}, {"readyTime", t(ready)}};
    if (recorder == party) {
      times["firstReadyTime"] = t(ready);
      times["imagePullStartTime"] = t(3);
      times["imagePullEndTime"] = t(7);
      times["containersStartTime"] = t(8);
      times["reasons"] = {
          {"pulling",
           {{"reason", "Pulling"},
            {"message", "Pulling image \"secretflow/secretflow-lite-anolis8:1.5.0b0\""},
            {"since", created + 3 * kSecond}}}};
    }
    pods[pod] = std::move(times);
    for (const char* port : {"spu", "fed", "global"})
      services[pod + "-" + port] = {{"createTime", t(0)}, {"readyTime", t(10)}};
  }
  const json phase = "Succeeded", createTime = t(0);
  Recording r{name, "cross-domain", recorder, created + 60 * kSecond + readySecond, json()};
  r.text = kuscia_host::model::timelineText(
      {name, "cross-domain", &phase, &createTime, &pods, &services}, {}, "");
  return r;
}

double cpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct RecordingCost {
  double firstCpuUs = 0, firstWallUs = 0, againCpuUs = 0, againWallUs = 0;
};
struct RecordingCosts {
  RecordingCost apart, together, batched;
};

// How a bench's recordings reach the store.
enum class Way { kApart, kTogether, kBatched };
// Tasks a transaction in the batched way: about what a busy tick makes ready at once.
constexpr std::size_t kBatch = 32;

// `tasks` two-party tasks recorded into an empty database: per recording, CPU and wall time.
// kApart: one by one, as two hosts do; kTogether: both parties' recordings of a task in one
// transaction, as one host recording both domains takes them; kBatched: kBatch such tasks in one
// transaction, as the writer takes the tasks a tick makes ready.
RecordingCost recordingCost(const std::string& database, std::size_t tasks, Way way) {
  RecordingCost c;
  auto store = openStore(database, "");
  const int64_t base = wallNanos() - kDay;
  auto pass = [&](int readySecond, double& cpuUs, double& wallUs) {
    double cpu0 = cpuMs(), wall0 = nowMs();
    std::size_t written = 0;
    for (std::size_t i = 0; i < tasks;) {
      const std::size_t n = way == Way::kBatched ? std::min(kBatch, tasks - i) : 1;
      std::vector<std::vector<Recording>> pairs;
      for (std::size_t j = i; j < i + n; ++j) {
        auto& pair = pairs.emplace_back();
        for (const char* party : {"alice", "bob"})
          pair.push_back(templateRecording(party, base + static_cast<int64_t>(j) * kSecond,
                                           "rec-" + std::to_string(j), readySecond));
      }
      i += n;
      if (way == Way::kApart) {
        for (const auto& r : pairs.front())
          written += store->record(r) ? 1 : 0;
        continue;
      }
      std::vector<std::vector<const Recording*>> batch;
      for (const auto& pair : pairs)
        batch.push_back({&pair[0], &pair[1]});
      for (const auto& changed : store->recordTasks(batch))
        written += static_cast<std::size_t>(std::count(changed.begin(), changed.end(), true));
    }
    if (written != 2 * tasks) {
      std::cerr << "history_bench: " << written << " of " << 2 * tasks
                << " recordings changed the store\n";
      std::exit(1);
    }
    cpuUs = (cpuMs() - cpu0) * 1e3 / static_cast<double>(2 * tasks);
    wallUs = (nowMs() - wall0) * 1e3 / static_cast<double>(2 * tasks);
  };
  pass(9, c.firstCpuUs, c.firstWallUs);
  pass(10, c.againCpuUs, c.againWallUs);
  return c;
}

std::string cpColumns() {
  std::string out;
  for (const char* p :
       {"creating", "scheduling", "accepting", "pulling", "starting", "readiness", "programming"})
    out += std::string(", cp_") + p;
  return out;
}

// N copies of the template, by SQL, chunk by chunk (the same statements on both databases).
void load(SqlDb& db, std::size_t n, int64_t base, bool postgres) {
  const int64_t step = kSpan / static_cast<int64_t>(n);
  const std::string series =
      "WITH RECURSIVE s(i) AS (SELECT CAST($1 AS BIGINT) UNION ALL SELECT i + 1 FROM s WHERE i < "
      "CAST($2 AS BIGINT)) ";
  const std::string created = "CAST($3 AS BIGINT) + i * CAST($4 AS BIGINT)";
  // Startups of 1.0 to 60.9 s, a tenth of the tasks failed, blame spread over four phases.
  const std::string startup = "(1 + (i * 7919) % 600 / 10.0)";
  const std::string cp = cpColumns();
  double started = nowMs();
  for (std::size_t from = 1; from <= n; from += kChunk) {
    std::size_t to = std::min(n, from + kChunk - 1);
    // Names are a permutation of the positions (7919 is prime to N): a name says nothing of
    // when the task was created, as with real tasks.
    std::vector<SqlValue> p = {static_cast<int64_t>(from), static_cast<int64_t>(to), base, step,
                               static_cast<int64_t>(n)};
    db.begin();
    db.run(series +
               "INSERT INTO tasks (task, namespace, phase, create_ns, complete, "
               "startup_seconds, blame_party, blame_phase" +
               cp +
               ", updated_ns, summary) "
               "SELECT 'bench-' || ((i * 7919) % CAST($5 AS BIGINT)), t.namespace, CASE WHEN i % "
               "10 = 0 THEN 'Failed' ELSE "
               "'Succeeded' END, " +
               created + ", 1, " + startup +
               ", CASE WHEN i % 3 = 0 THEN 'alice' ELSE 'bob' END, CASE i % 4 WHEN 0 THEN "
               "'pulling' WHEN 1 THEN 'scheduling' WHEN 2 THEN 'readiness' ELSE 'accepting' END" +
               cp + ", t.updated_ns, t.summary FROM tasks t, s WHERE t.task = 'bench-template'",
           p, {});
    db.run(series + "INSERT INTO task_parties (task, party, create_ns, startup_seconds" + cp +
               ") SELECT 'bench-' || ((i * 7919) % CAST($5 AS BIGINT)), tp.party, " + created +
               ", " + startup + " - CASE WHEN tp.party = 'alice' THEN 0.5 ELSE 0 END" + cp +
               " FROM task_parties tp, s WHERE tp.task = 'bench-template'",
           p, {});
    db.run(series + "INSERT INTO recordings (task, recorder, at_ns, document) SELECT 'bench-' || "
                    "((i * 7919) % CAST($3 AS BIGINT)), r.recorder, r.at_ns, r.document FROM "
                    "recordings r, s WHERE r.task = 'bench-template'",
           {p[0], p[1], p[4]}, {});
    db.commit();
    std::cerr << "  ... " << to << "/" << n << " tasks stored (" << (nowMs() - started) / 1000
              << " s)\n";
  }
  // As autovacuum would have by then: statistics, and PostgreSQL's visibility map (index-only
  // scans).
  db.script(postgres ? "VACUUM ANALYZE" : "ANALYZE");
}

struct Timing {
  std::vector<double> ms;
  double quantile(double q) {
    std::sort(ms.begin(), ms.end());
    if (ms.empty()) return 0;
    return ms[std::min(ms.size() - 1,
                       static_cast<std::size_t>(q * static_cast<double>(ms.size())))];
  }
};

// One GET through the admin API's code; its status, timed into `t`.
json get(HistoryStore& store, const std::string& path, const std::string& query, Timing& t) {
  sdk::HttpRequest req{"GET", path, query};
  sdk::HttpResponse res;
  double start = nowMs();
  serveHistory(store, req, res, wallNanos());
  t.ms.push_back(nowMs() - start);
  if (res.status != 200) {
    std::cerr << "history_bench: " << path << "?" << query << " answered " << res.status << ": "
              << res.body << "\n";
    std::exit(1);
  }
  return json::parse(res.body);
}

struct Result {
  std::string db;
  double pageP50 = 0, pageP99 = 0, taskP99 = 0, statsMax = 0, bytesPerTask = 0, loadSeconds = 0;
  RecordingCosts recording;
};

Result run(const std::string& name, const std::string& database, SqlDb& bulk, std::size_t n,
           std::size_t queries, const std::function<double()>& diskBytes) {
  Result r;
  r.db = name;
  const int64_t base = wallNanos() - kSpan;
  {
    auto store = openStore(database, "");
    store->record(templateRecording("alice", base));
    store->record(templateRecording("bob", base));
  }
  std::cerr << name << ": storing " << n << " tasks\n";
  double started = nowMs();
  load(bulk, n, base, name == "PostgreSQL");
  openStore(database, "")->rebuildStats(); // what record() keeps in step, for the bulk load
  r.loadSeconds = (nowMs() - started) / 1000;
  auto store = openStore(database, "", true);
  std::mt19937_64 rng(42);
  const int64_t step = kSpan / static_cast<int64_t>(n);
  // Pages: every filter, from the newest and from random depths.
  const std::vector<std::string> filters = {"",
                                            "party=bob",
                                            "phase=Failed",
                                            "minStartupSeconds=30",
                                            "blamePhase=pulling",
                                            "q=bench-12",
                                            "q=bench-123",
                                            "since=7d",
                                            "since=30d&until=20d",
                                            "order=slowest&since=30d"};
  Timing pages;
  std::map<std::string, Timing> byFilter;
  for (std::size_t i = 0; i < queries; ++i) {
    const std::string& f = filters[i % filters.size()];
    std::size_t before = pages.ms.size();
    std::string q = f + (f.empty() ? "" : "&") + "limit=100";
    if (i % 2 == 1 && f.find("order=") == std::string::npos) {
      std::size_t at = 1 + rng() % n;
      q += "&continue=" + std::to_string(base + static_cast<int64_t>(at) * step) + ".bench-" +
           std::to_string(at * 7919 % n);
    }
    json page = get(*store, "/api/v1/history", q, pages);
    if (pages.ms.size() > before) byFilter[f].ms.push_back(pages.ms.back());
    if (f.empty() && page["items"].size() != 100) {
      std::cerr << "history_bench: a page of " << page["items"].size() << " items\n";
      std::exit(1);
    }
  }
  r.pageP50 = pages.quantile(0.5);
  r.pageP99 = pages.quantile(0.99);
  for (auto& [f, t] : byFilter)
    std::fprintf(stderr, "  %s page \"%s\": p50 %.2f ms, max %.2f ms\n", name.c_str(), f.c_str(),
                 t.quantile(0.5), t.quantile(1.0));
  Timing one;
  for (std::size_t i = 0; i < queries; ++i)
    get(*store, "/api/v1/history/bench-" + std::to_string(rng() % n), "", one);
  r.taskP99 = one.quantile(0.99);
  Timing stats;
  std::map<std::string, Timing> byGroup;
  for (const char* g :
       {"", "groupBy=party", "groupBy=day", "groupBy=day,party", "groupBy=blamePhase"})
    for (int i = 0; i < 2; ++i) {
      json s = get(*store, "/api/v1/history/stats", std::string("since=30d") + (*g ? "&" : "") + g,
                   stats);
      byGroup[g].ms.push_back(stats.ms.back());
      std::size_t tasks = 0;
      for (const auto& grp : s["groups"])
        tasks += grp["tasks"].get<std::size_t>();
      std::size_t expected = std::string(g).find("party") != std::string::npos ? 2 : 1;
      if (tasks < expected * (n / 3 - n / 100)) {
        std::cerr << "history_bench: stats counted " << tasks << " tasks in 30 days\n";
        std::exit(1);
      }
    }
  r.statsMax = stats.quantile(1.0);
  for (auto& [g, t] : byGroup)
    std::fprintf(stderr, "  %s stats \"%s\": max %.1f ms\n", name.c_str(), g.c_str(),
                 t.quantile(1.0));
  r.bytesPerTask = diskBytes() / static_cast<double>(n);
  return r;
}

int64_t fileBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

} // namespace

int main(int argc, char** argv) {
  std::size_t n = 1000000, queries = 200, recordings = 1000;
  std::string which = "both";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--tasks")
      n = std::stoul(argv[i + 1]);
    else if (a == "--queries")
      queries = std::stoul(argv[i + 1]);
    else if (a == "--recordings")
      recordings = std::stoul(argv[i + 1]);
    else if (a == "--db")
      which = argv[i + 1];
    else {
      std::cerr << "usage: history_bench [--tasks N] [--queries Q] [--recordings R] [--db "
                   "sqlite|postgresql|both]\n";
      return 2;
    }
  }
  std::vector<Result> results;
  char tmpl[] = "/tmp/kh-b8-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  // The recording cost on an empty database of its own, then the reads at N tasks.
  auto measure = [&](const std::string& name, const std::string& recordingDb,
                     const std::string& togetherDb, const std::string& batchedDb,
                     const std::function<Result()>& reads) {
    Result r;
    if (recordings > 0) {
      std::cerr << name << ": recording " << recordings
                << " two-party tasks twice, one party at a time, both together, then " << kBatch
                << " tasks a transaction\n";
      RecordingCosts c{recordingCost(recordingDb, recordings, Way::kApart),
                       recordingCost(togetherDb, recordings, Way::kTogether),
                       recordingCost(batchedDb, recordings, Way::kBatched)};
      if (n > 0) r = reads();
      r.recording = c;
    } else if (n > 0) {
      r = reads();
    }
    r.db = name;
    results.push_back(r);
  };
  if (which != "postgresql") {
    std::string path = dir + "/history.db";
    measure("SQLite", dir + "/recording.db", dir + "/together.db", dir + "/batched.db", [&] {
      openStore(path, "");
      auto bulk = openSqlite(path);
      return run("SQLite", path, *bulk, n, queries,
                 [&] { return static_cast<double>(fileBytes(path) + fileBytes(path + "-wal")); });
    });
  }
  if (which != "sqlite") {
    kuscia_host::test::PostgresServer pg;
    if (!pg.available()) {
      std::cerr << "history_bench: PostgreSQL: " << pg.why() << "\n";
      return 1;
    }
    pg.psql("CREATE DATABASE b8");
    pg.psql("CREATE DATABASE b8rec");
    pg.psql("CREATE DATABASE b8together");
    pg.psql("CREATE DATABASE b8batched");
    measure("PostgreSQL", pg.uri("b8rec"), pg.uri("b8together"), pg.uri("b8batched"), [&] {
      std::string uri = pg.uri("b8");
      openStore(uri, "");
      auto bulk = openPostgres(uri, "");
      return run("PostgreSQL", uri, *bulk, n, queries, [&] {
        double bytes = 0;
        bulk->run("SELECT pg_database_size(current_database())", {},
                  [&](const SqlRow& row) { bytes = static_cast<double>(row.integer(0)); });
        return bytes;
      });
    });
  }
  std::filesystem::remove_all(dir);
  if (recordings > 0) {
    std::printf("B8 recording, %zu two-party tasks into an empty database (the writer's part of "
                "task-history's recording cost)\n",
                recordings);
    for (const auto& r : results)
      for (const auto& [how, c] : {std::pair{"one party at a time", r.recording.apart},
                                   std::pair{"both parties together", r.recording.together},
                                   std::pair{"32 tasks a transaction", r.recording.batched}})
        std::printf("  %-11s %-22s first recording %6.0f us CPU (%6.0f us wall); again, merged "
                    "%6.0f us CPU (%6.0f us wall)\n",
                    r.db.c_str(), how, c.firstCpuUs, c.firstWallUs, c.againCpuUs, c.againWallUs);
    if (!results.empty() && results.front().recording.apart.firstCpuUs > 0)
      std::printf("  (per recording; together, a task's two recordings share one transaction, one "
                  "read of the stored documents and one summary: the ratio of CPU, together to "
                  "apart, %.2f first and %.2f merged, %s)\n",
                  results.front().recording.together.firstCpuUs /
                      results.front().recording.apart.firstCpuUs,
                  results.front().recording.together.againCpuUs /
                      results.front().recording.apart.againCpuUs,
                  results.front().db.c_str());
    for (const auto& r : results)
      if (r.recording.together.firstCpuUs > 0)
        std::printf("  (%s: %zu tasks a transaction against one, CPU %.2f first and %.2f "
                    "merged)\n",
                    r.db.c_str(), kBatch,
                    r.recording.batched.firstCpuUs / r.recording.together.firstCpuUs,
                    r.recording.batched.againCpuUs / r.recording.together.againCpuUs);
  }
  if (n == 0) return 0;
  std::printf("B8 task history, %zu recorded two-party tasks over 90 days, %zu queries each\n", n,
              queries);
  std::printf("  %-11s %10s %10s %10s %12s %12s %10s\n", "database", "page p50", "page p99",
              "task p99", "stats 30d", "bytes/task", "load");
  for (const auto& r : results)
    std::printf("  %-11s %8.2f ms %8.2f ms %8.2f ms %10.1f ms %12.0f %8.1f s\n", r.db.c_str(),
                r.pageP50, r.pageP99, r.taskP99, r.statsMax, r.bytesPerTask, r.loadSeconds);
  for (const auto& r : results)
    std::printf("  %s: page p99 %.2f/20 ms (%s), task p99 %.2f/5 ms (%s), stats %.0f/500 ms (%s)\n",
                r.db.c_str(), r.pageP99, r.pageP99 <= 20 ? "met" : "not met", r.taskP99,
                r.taskP99 <= 5 ? "met" : "not met", r.statsMax,
                r.statsMax <= 500 ? "met" : "not met");
  return 0;
}
