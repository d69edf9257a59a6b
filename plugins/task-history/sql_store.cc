// HistoryStore over SqlDb: the schema, its migrations, and every query, once for both databases.
#include <kuscia_host/kube_text.hpp>
#include <zlib.h>
#include <kuscia_host/timeline_summary.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>

#include "history_doc.h"
#include "history_store.h"
#include "sql_db.h"

namespace kuscia_host::plugins::history {

using nlohmann::json;

namespace {

// The phases a critical path may hold, as columns (cp_<phase>: seconds on the path).
constexpr std::array<const char*, 7> kPathPhases = {
    "creating", "scheduling", "accepting", "pulling", "starting", "readiness", "programming"};
static_assert(std::size(sdk::timeline::kPhaseNames) == kPathPhases.size());

std::string pathColumns(const char* prefix, const char* suffix) {
  std::string out;
  for (const char* p : kPathPhases)
    out += std::string(prefix) + "cp_" + p + suffix;
  return out;
}

// Each migration runs once, in order, in its own transaction; its index + 1 is the version.
const std::vector<std::string>& migrations() {
  static const std::vector<std::string> m = {
      "CREATE TABLE tasks (task TEXT PRIMARY KEY, namespace TEXT NOT NULL, phase TEXT NOT NULL,"
      " create_ns BIGINT NOT NULL, complete INTEGER NOT NULL, startup_seconds DOUBLE PRECISION,"
      " blame_party TEXT NOT NULL, blame_phase TEXT NOT NULL," +
      pathColumns(" ", " DOUBLE PRECISION NOT NULL,") +
      " updated_ns BIGINT NOT NULL, summary BYTEA NOT NULL);"
      "CREATE INDEX tasks_by_create ON tasks (create_ns, task);"
      "CREATE TABLE task_parties (task TEXT NOT NULL, party TEXT NOT NULL,"
      " create_ns BIGINT NOT NULL, startup_seconds DOUBLE PRECISION," +
      pathColumns(" ", " DOUBLE PRECISION NOT NULL,") +
      " PRIMARY KEY (task, party));"
      "CREATE INDEX task_parties_by_party ON task_parties (party, create_ns, task);"
      "CREATE TABLE recordings (task TEXT NOT NULL, recorder TEXT NOT NULL,"
      " at_ns BIGINT NOT NULL, document BYTEA NOT NULL, PRIMARY KEY (task, recorder));"};
  return m;
}

// Seconds of the summary's critical path per phase, all of it or one party's.
std::array<double, kPathPhases.size()> pathSeconds(const json& summary, const std::string& party) {
  std::array<double, kPathPhases.size()> out{};
  if (!summary.contains("criticalPath") || !summary["criticalPath"].is_array()) return out;
  for (const auto& p : summary["criticalPath"]) {
    if (!p.is_object() || !p.contains("seconds") || !p["seconds"].is_number()) continue;
    if (!party.empty() && p.value("party", "") != party) continue;
    std::string phase = p.value("phase", "");
    for (std::size_t i = 0; i < kPathPhases.size(); ++i)
      if (phase == kPathPhases[i]) out[i] += p["seconds"].get<double>();
  }
  return out;
}

std::string dayText(int64_t day) {
  std::time_t secs = static_cast<std::time_t>(day * 86400);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// Documents and summaries are stored deflated (zlib), after the original size (4 bytes, little
// endian): a recording's JSON shrinks about sixfold.
SqlBytes pack(const std::string& text) {
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::string out(4 + size, '\0');
  auto n = static_cast<uint32_t>(text.size());
  for (int i = 0; i < 4; ++i)
    out[i] = static_cast<char>(n >> (8 * i) & 0xff);
  if (compress2(reinterpret_cast<Bytef*>(out.data() + 4), &size,
                reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                6) != Z_OK)
    throw StoreError("cannot compress a document", false);
  out.resize(4 + size);
  return SqlBytes{std::move(out)};
}

// The JSON of pack(); discarded when it is not one (a damaged row is skipped, not fatal).
json unpackJson(const std::string& packed) {
  if (packed.size() < 4) return json::value_t::discarded;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i)
    n |= static_cast<uint32_t>(static_cast<unsigned char>(packed[i])) << (8 * i);
  if (n > (64u << 20)) return json::value_t::discarded;
  std::string text(n, '\0');
  uLongf size = n;
  if (uncompress(reinterpret_cast<Bytef*>(text.data()), &size,
                 reinterpret_cast<const Bytef*>(packed.data() + 4),
                 static_cast<uLong>(packed.size() - 4)) != Z_OK ||
      size != n)
    return json::value_t::discarded;
  return json::parse(text, nullptr, false);
}

SqlValue optional(const std::optional<double>& v) {
  return v ? SqlValue(*v) : SqlValue(nullptr);
}

class SqlStore final : public HistoryStore {
public:
  SqlStore(std::unique_ptr<SqlDb> db, bool readOnly) : db_(std::move(db)) {
    if (readOnly)
      checkVersion();
    else
      migrate();
  }

  bool record(const Recording& r) override {
    Transaction tx(*db_);
    db_->lockTask(r.task);
    json stored;
    db_->run("SELECT document FROM recordings WHERE task = $1 AND recorder = $2",
             {r.task, r.recorder},
             [&](const SqlRow& row) { stored = unpackJson(row.bytes(0)); });
    json merged = mergeRecording(stored, r.document);
    if (!stored.is_discarded() && merged == stored) return false;
    db_->run("INSERT INTO recordings (task, recorder, at_ns, document) VALUES ($1, $2, $3, $4)"
             " ON CONFLICT (task, recorder) DO UPDATE SET at_ns = excluded.at_ns,"
             " document = excluded.document",
             {r.task, r.recorder, r.atNanos, pack(merged.dump())});
    std::vector<StoredRecording> all = recordings(r.task);
    json doc = combine(all);
    int64_t latest = r.atNanos;
    for (const auto& s : all)
      latest = std::max(latest, s.atNanos);
    TaskRow row = taskRowOf(doc, latest);
    auto cp = pathSeconds(row.summary, "");
    std::vector<SqlValue> p = {r.task,
                               r.namespaceName,
                               row.phase,
                               row.createNanos,
                               int64_t{row.complete ? 1 : 0},
                               optional(row.startupSeconds),
                               row.blameParty,
                               row.blamePhase,
                               latest,
                               pack(row.summary.dump())};
    for (double s : cp)
      p.emplace_back(s);
    std::string cols, vals, sets;
    for (std::size_t i = 0; i < kPathPhases.size(); ++i) {
      std::string c = std::string("cp_") + kPathPhases[i];
      cols += ", " + c;
      vals += ", $" + std::to_string(11 + i);
      sets += ", " + c + " = excluded." + c;
    }
    db_->run("INSERT INTO tasks (task, namespace, phase, create_ns, complete, startup_seconds,"
             " blame_party, blame_phase, updated_ns, summary" +
                 cols + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10" + vals +
                 ") ON CONFLICT (task) DO UPDATE SET namespace = excluded.namespace,"
                 " phase = excluded.phase, create_ns = excluded.create_ns,"
                 " complete = excluded.complete, startup_seconds = excluded.startup_seconds,"
                 " blame_party = excluded.blame_party, blame_phase = excluded.blame_phase,"
                 " updated_ns = excluded.updated_ns, summary = excluded.summary" +
                 sets,
             p);
    db_->run("DELETE FROM task_parties WHERE task = $1", {r.task});
    for (const auto& party : row.parties) {
      std::optional<double> startup;
      const json& parties = row.summary.value("parties", json::object());
      if (parties.contains(party) && parties[party].is_object() &&
          parties[party].contains("startupSeconds") && parties[party]["startupSeconds"].is_number())
        startup = parties[party]["startupSeconds"].get<double>();
      std::vector<SqlValue> pp = {r.task, party, row.createNanos, optional(startup)};
      for (double s : pathSeconds(row.summary, party))
        pp.emplace_back(s);
      std::string pvals;
      for (std::size_t i = 0; i < kPathPhases.size(); ++i)
        pvals += ", $" + std::to_string(5 + i);
      db_->run("INSERT INTO task_parties (task, party, create_ns, startup_seconds" + cols +
                   ") VALUES ($1, $2, $3, $4" + pvals + ")",
               pp);
    }
    tx.commit();
    return true;
  }

  HistoryPage list(const HistoryQuery& q) override {
    // With a party, the walk is over that party's index; otherwise over the tasks'.
    bool byParty = !q.party.empty();
    std::string t = byParty ? "p." : "t.";
    std::string sql =
        "SELECT t.task, t.namespace, t.phase, t.create_ns, t.summary FROM " +
        std::string(byParty ? "task_parties p JOIN tasks t ON t.task = p.task" : "tasks t") +
        " WHERE 1 = 1";
    std::vector<SqlValue> params;
    auto param = [&](SqlValue v) {
      params.push_back(std::move(v));
      return "$" + std::to_string(params.size());
    };
    if (byParty) sql += " AND p.party = " + param(q.party);
    if (q.since) sql += " AND " + t + "create_ns >= " + param(*q.since);
    if (q.until) sql += " AND " + t + "create_ns < " + param(*q.until);
    if (!q.phase.empty()) sql += " AND t.phase = " + param(q.phase);
    if (!q.blamePhase.empty()) sql += " AND t.blame_phase = " + param(q.blamePhase);
    if (q.minStartupSeconds) sql += " AND t.startup_seconds >= " + param(*q.minStartupSeconds);
    if (!q.prefix.empty()) {
      // Names are DNS labels: '~' sorts after every character they may hold.
      sql += " AND " + t + "task >= " + param(q.prefix);
      sql += " AND " + t + "task < " + param(q.prefix + "~");
    }
    if (q.after && !q.slowest) {
      std::string c = param(q.after->first);
      std::string n = param(q.after->second);
      sql += " AND (" + t + "create_ns < " + c + " OR (" + t + "create_ns = " + c + " AND " + t +
             "task < " + n + "))";
    }
    if (q.slowest)
      sql += " AND t.startup_seconds IS NOT NULL ORDER BY t.startup_seconds DESC, t.task DESC LIMIT " +
             param(static_cast<int64_t>(q.limit));
    else
      sql += " ORDER BY " + t + "create_ns DESC, " + t + "task DESC LIMIT " +
             param(static_cast<int64_t>(q.limit + 1));
    HistoryPage page;
    db_->run(sql, params, [&](const SqlRow& row) {
      HistoryItem it;
      it.task = row.text(0);
      it.namespaceName = row.text(1);
      it.phase = row.text(2);
      it.createNanos = row.integer(3);
      it.summary = unpackJson(row.bytes(4));
      page.items.push_back(std::move(it));
    });
    if (page.items.size() > q.limit) {
      page.items.pop_back();
      page.next = std::pair{page.items.back().createNanos, page.items.back().task};
    }
    return page;
  }

  std::optional<json> document(const std::string& task) override {
    auto all = recordings(task);
    if (all.empty()) return std::nullopt;
    json doc = combine(all);
    int64_t latest = 0;
    for (const auto& r : all)
      latest = std::max(latest, r.atNanos);
    doc["recordedTime"] = sdk::formatTime(latest, sdk::TimePrecision::kAsGiven);
    return doc;
  }

  std::vector<StatsGroup> stats(int64_t since, int64_t until, const std::string& groupBy) override {
    // The day as a number (integer division: the same in both databases), formatted here.
    bool byParty = groupBy == "party" || groupBy == "day,party";
    const std::string day = "create_ns / 86400000000000";
    std::string keys = groupBy == "party"        ? "'', party"
                       : groupBy == "day,party"  ? day + ", party"
                       : groupBy == "day"        ? day + ", ''"
                       : groupBy == "blamePhase" ? "0, blame_phase"
                                                 : "0, ''";
    std::string from = byParty ? "task_parties" : "tasks";
    std::string where = " FROM " + from + " WHERE create_ns >= $1 AND create_ns < $2";
    std::map<std::pair<std::string, std::string>, StatsGroup> groups;
    auto keyOf = [&](const SqlRow& row) {
      return std::pair{groupBy == "day" || groupBy == "day,party" ? dayText(row.integer(0))
                                                                   : std::string(),
                       row.text(1)};
    };
    auto groupOf = [&](const SqlRow& row) -> StatsGroup& {
      auto k = keyOf(row);
      const std::string& d = k.first;
      const std::string& second = k.second;
      StatsGroup& g = groups[k];
      if (g.key.empty()) {
        g.day = d;
        g.party = byParty ? second : "";
        g.key = groupBy == "day,party" ? d + "/" + second
                : groupBy == "day"     ? d
                : groupBy.empty()      ? "all"
                : second.empty()       ? "none"
                                       : second;
      }
      return g;
    };
    std::string sums;
    for (const char* phase : kPathPhases)
      sums += std::string(", sum(cp_") + phase + ")";
    db_->run("SELECT " + keys + ", count(*), count(startup_seconds)" + sums + where +
                 " GROUP BY 1, 2",
             {since, until}, [&](const SqlRow& row) {
               StatsGroup& g = groupOf(row);
               g.tasks = static_cast<std::size_t>(row.integer(2));
               g.complete = static_cast<std::size_t>(row.integer(3));
               for (std::size_t i = 0; i < kPathPhases.size(); ++i)
                 if (double s = row.isNull(4 + int(i)) ? 0 : row.real(4 + int(i)); s != 0)
                   g.phaseSeconds.emplace_back(kPathPhases[i], s);
             });
    // Percentiles from each group's startups counted by the millisecond, in order: exact, and
    // the answer holds one row per distinct startup, not one per task.
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<int64_t, int64_t>>> counts;
    db_->run("SELECT " + keys + ", CAST(round(startup_seconds * 1000) AS BIGINT), count(*)" +
                 where + " AND startup_seconds IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
             {since, until}, [&](const SqlRow& row) {
               counts[keyOf(row)].emplace_back(row.integer(2), row.integer(3));
             });
    std::vector<StatsGroup> out;
    for (auto& [k, g] : groups) {
      if (auto it = counts.find(k); it != counts.end() && g.complete > 0) {
        const auto& sorted = it->second;
        const auto complete = static_cast<double>(g.complete);
        auto rank = [&sorted, complete](double p) {
          auto want = std::max<int64_t>(static_cast<int64_t>(std::ceil(p * complete)), 1);
          int64_t seen = 0;
          for (const auto& [ms, n] : sorted)
            if ((seen += n) >= want) return static_cast<double>(ms) / 1000;
          return static_cast<double>(sorted.back().first) / 1000;
        };
        g.p50 = rank(0.5);
        g.p90 = rank(0.9);
        g.p99 = rank(0.99);
      }
      out.push_back(std::move(g));
    }
    std::sort(out.begin(), out.end(),
              [](const StatsGroup& a, const StatsGroup& b) { return a.key < b.key; });
    return out;
  }

  std::size_t prune(int64_t before, std::size_t maxTasks, std::size_t batch) override {
    std::vector<std::string> doomed;
    auto collect = [&](const SqlRow& row) { doomed.push_back(row.text(0)); };
    db_->run("SELECT task FROM tasks WHERE create_ns < $1 ORDER BY create_ns, task LIMIT $2",
             {before, static_cast<int64_t>(batch)}, collect);
    if (maxTasks > 0 && doomed.size() < batch) {
      // Beyond the cap: the oldest again (those past retention are among them).
      std::size_t n = count();
      std::size_t excess = n > maxTasks ? n - maxTasks : 0;
      if (excess > doomed.size()) {
        doomed.clear();
        db_->run("SELECT task FROM tasks ORDER BY create_ns, task LIMIT $1",
                 {static_cast<int64_t>(std::min(batch, excess))}, collect);
      }
    }
    if (doomed.empty()) return 0;
    Transaction tx(*db_);
    for (const auto& task : doomed)
      for (const char* table : {"tasks", "task_parties", "recordings"})
        db_->run(std::string("DELETE FROM ") + table + " WHERE task = $1", {task});
    tx.commit();
    return doomed.size();
  }

  std::size_t count() override {
    int64_t n = 0;
    db_->run("SELECT count(*) FROM tasks", {}, [&](const SqlRow& row) { n = row.integer(0); });
    return static_cast<std::size_t>(n);
  }

  std::string describe() const override { return db_->describe(); }

private:
  // Rolls back unless committed.
  class Transaction {
  public:
    explicit Transaction(SqlDb& db) : db_(db) { db_.begin(); }
    ~Transaction() {
      if (!done_) db_.rollback();
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit() {
      db_.commit();
      done_ = true;
    }

  private:
    SqlDb& db_;
    bool done_ = false;
  };

  std::vector<StoredRecording> recordings(const std::string& task) {
    std::vector<StoredRecording> all;
    db_->run("SELECT recorder, at_ns, document FROM recordings WHERE task = $1", {task},
             [&](const SqlRow& row) {
               json d = unpackJson(row.bytes(2));
               if (!d.is_discarded()) all.push_back({row.text(0), row.integer(1), std::move(d)});
             });
    return all;
  }

  // A reader needs the schema it knows: the host that records applies the migrations.
  void checkVersion() {
    int64_t version = -1;
    try {
      db_->run("SELECT coalesce(max(version), 0) FROM schema_migrations", {},
               [&](const SqlRow& row) { version = row.integer(0); });
    } catch (const StoreError&) {
      version = 0; // no table: not a history database (yet)
    }
    auto known = static_cast<int64_t>(migrations().size());
    if (version == known) return;
    throw StoreError(db_->describe() +
                         (version == 0 ? ": not a task-history database (no schema)"
                          : version > known
                              ? ": the schema is at version " + std::to_string(version) +
                                    ", newer than this kuscia-host knows (" +
                                    std::to_string(known) + "): use a newer kuscia-host"
                              : ": the schema is at version " + std::to_string(version) +
                                    ": a host running task-history on it migrates it"),
                     false);
  }

  void migrate() {
    db_->script("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                " applied_ns BIGINT NOT NULL)");
    const auto& m = migrations();
    for (;;) {
      Transaction tx(*db_);
      db_->lockTask("schema_migrations");
      int64_t version = 0;
      db_->run("SELECT coalesce(max(version), 0) FROM schema_migrations", {},
               [&](const SqlRow& row) { version = row.integer(0); });
      if (version > static_cast<int64_t>(m.size()))
        throw StoreError(db_->describe() + ": the schema is at version " + std::to_string(version) +
                             ", newer than this kuscia-host knows (" + std::to_string(m.size()) +
                             "): use a newer kuscia-host",
                         false);
      if (version == static_cast<int64_t>(m.size())) return;
      db_->script(m[static_cast<std::size_t>(version)]);
      db_->run("INSERT INTO schema_migrations (version, applied_ns) VALUES ($1, $2)",
               {version + 1,
                static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count())});
      tx.commit();
    }
  }

  std::unique_ptr<SqlDb> db_;
};

} // namespace

std::unique_ptr<HistoryStore> openStore(const std::string& database, const std::string& password,
                                        bool readOnly) {
  bool postgres = database.rfind("postgresql://", 0) == 0 || database.rfind("postgres://", 0) == 0;
  if (postgres) return std::make_unique<SqlStore>(openPostgres(database, password), readOnly);
  return std::make_unique<SqlStore>(openSqlite(database, readOnly), readOnly);
}

} // namespace kuscia_host::plugins::history
