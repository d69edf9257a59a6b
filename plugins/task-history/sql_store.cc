// HistoryStore over SqlDb: the schema, its migrations, and every query, once for both databases.
#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/timeline_summary.h>
// zlib's next_in as a pointer to const.
#define ZLIB_CONST
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <limits>
#include <map>
#include <tuple>

#include "history_doc.h"
#include "history_store.h"
#include "pack_dictionary.h"
#include "sql_db.h"
#include <kuscia_model/json_text.h>
#include <kuscia_model/kuscia.h>

namespace kuscia_host::plugins::history {

using nlohmann::json;

namespace {

// The phases a critical path may hold, as columns (cp_<phase>, '-' as '_': seconds on the path).
constexpr std::array<const char*, 10> kPathPhases = {
    "creating",  "scheduling", "reserving", "awaiting-parties", "binding",
    "accepting", "pulling",    "starting",  "readiness",        "programming"};
static_assert(std::size(model::timeline::kPhaseNames) == kPathPhases.size());
// TaskRow's path seconds follow kPhaseNames: the columns must be in the same order.
static_assert([] {
  for (std::size_t i = 0; i < kPathPhases.size(); ++i)
    if (std::string_view(kPathPhases[i]) != model::timeline::kPhaseNames[i]) return false;
  return true;
}());
// Schema 1's columns; schema 4 added those of the reservation across parties.
constexpr std::array<const char*, 7> kPathPhasesV1 = {
    "creating", "scheduling", "accepting", "pulling", "starting", "readiness", "programming"};
constexpr std::array<const char*, 3> kPathPhasesV4 = {"reserving", "awaiting-parties", "binding"};

std::string column(std::string_view phase) {
  std::string c = "cp_" + std::string(phase);
  std::replace(c.begin(), c.end(), '-', '_');
  return c;
}

template <std::size_t N>
std::string pathColumns(const char* prefix, const char* suffix,
                        const std::array<const char*, N>& phases) {
  std::string out;
  for (const char* p : phases)
    out += std::string(prefix) + column(p) + suffix;
  return out;
}
std::string pathColumns(const char* prefix, const char* suffix) {
  return pathColumns(prefix, suffix, kPathPhases);
}

// Schema 4: the reservation's columns in each table that has a critical path's.
std::string reservationColumns() {
  std::string out;
  for (const char* table : {"tasks", "task_parties", "stats_days"})
    for (const char* p : kPathPhasesV4)
      out += std::string("ALTER TABLE ") + table + " ADD COLUMN " + column(p) +
             " DOUBLE PRECISION NOT NULL DEFAULT 0;";
  return out;
}

// Schema 5: each KusciaJob as last seen.
std::string jobsTable() {
  return "CREATE TABLE jobs (job NAME_TYPE PRIMARY KEY, namespace TEXT NOT NULL,"
         " phase TEXT NOT NULL, create_ns BIGINT NOT NULL, updated_ns BIGINT NOT NULL,"
         " object BYTEA NOT NULL);"
         "CREATE INDEX jobs_by_create ON jobs (create_ns, job);";
}

// Each migration runs once, in order, in its own transaction; its index + 1 is the version.
const std::vector<std::string>& migrations() {
  static const std::vector<std::string> m = {
      "CREATE TABLE tasks (task NAME_TYPE PRIMARY KEY, namespace TEXT NOT NULL, phase TEXT NOT "
      "NULL,"
      " create_ns BIGINT NOT NULL, complete INTEGER NOT NULL, startup_seconds DOUBLE PRECISION,"
      " blame_party TEXT NOT NULL, blame_phase TEXT NOT NULL," +
          pathColumns(" ", " DOUBLE PRECISION NOT NULL,", kPathPhasesV1) +
          " updated_ns BIGINT NOT NULL, summary BYTEA NOT NULL);"
          "CREATE INDEX tasks_by_create ON tasks (create_ns, task);"
          "CREATE INDEX tasks_by_startup ON tasks (startup_seconds, task);"
          "CREATE TABLE task_parties (task NAME_TYPE NOT NULL, party TEXT NOT NULL,"
          " create_ns BIGINT NOT NULL, startup_seconds DOUBLE PRECISION," +
          pathColumns(" ", " DOUBLE PRECISION NOT NULL,", kPathPhasesV1) +
          " PRIMARY KEY (task, party));"
          "CREATE INDEX task_parties_by_party ON task_parties (party, create_ns, task);"
          "CREATE TABLE stats_days (kind TEXT NOT NULL, day BIGINT NOT NULL, dim TEXT NOT NULL,"
          " bucket BIGINT NOT NULL, tasks BIGINT NOT NULL," +
          pathColumns(" ", " DOUBLE PRECISION NOT NULL,", kPathPhasesV1) +
          " PRIMARY KEY (kind, day, dim, bucket));"
          "CREATE TABLE recordings (task TEXT NOT NULL, recorder TEXT NOT NULL,"
          " at_ns BIGINT NOT NULL, document BYTEA NOT NULL, PRIMARY KEY (task, recorder));",
      // 2: documents and summaries may be packed against the built-in dictionary (Packer), which
      // a kuscia-host of schema 1 cannot read: by this version it refuses the database by name
      // instead of skipping every such row. No table changes.
      "SELECT 1",
      // 3: why a task failed or is stuck (summary.failure or summary.stuck): its reason and the
      // party of its evidence, "" for neither; filtered and grouped by (stats kind "reason").
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one migration of three statements
      "ALTER TABLE tasks ADD COLUMN reason TEXT NOT NULL DEFAULT '';"
      "ALTER TABLE tasks ADD COLUMN reason_party TEXT NOT NULL DEFAULT '';"
      "CREATE INDEX tasks_by_reason ON tasks (reason, create_ns, task);",
      // 4: the phases of the reservation across parties (reserving, awaiting-parties, binding)
      // on the critical path, as the others'.
      reservationColumns(),
      // 5: the KusciaJobs, each as last seen (its view is computed from it and its tasks').
      jobsTable()};
  return m;
}

// Indexes that change nothing any version reads or writes, only how fast a query runs: created
// by a host that records (migrate()) when missing, without a new schema version, which would
// make every earlier kuscia-host refuse the database.
//  - tasks_by_name: a page under a name prefix few tasks have walks the names for its keys and
//    reads each row only once it is on the page (the primary key alone would fetch every
//    matching row for its creation time: 22 ms for 1,111 of 1,000,000 tasks in PostgreSQL,
//    4.6 ms with it).
// Looked up first: creating one that exists would still lock the table for a moment in
// PostgreSQL, at every start of a writer or reader.
struct Index {
  const char* name;
  const char* create;
};
const Index kIndexes[] = {
    {"tasks_by_name", "CREATE INDEX tasks_by_name ON tasks (task, create_ns)"},
};

std::string dayText(int64_t day) {
  auto secs = static_cast<std::time_t>(day * 86400);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// Documents and summaries are stored compressed, after the original size (4 bytes, little
// endian): a zstd frame at its fastest level (-1) against the built-in dictionary
// (pack_dictionary.h), marked by the size's top bit. Against level 3 without it (what versions
// before schema 2 wrote): a recording of 1.8 KB takes 253 bytes instead of 355 and 38,000
// instructions instead of 63,000; a summary 199 bytes instead of 285. Earlier rows are read as
// they are: zstd frames without the dictionary, and zlib streams before those (a zlib stream
// never begins with zstd's magic number).
constexpr uint32_t kWithDictionary1 = 0x80000000u;
constexpr uint32_t kMaxDocumentBytes = 64u << 20; // far below the marker bit
constexpr int kPackLevel = -1;

// The dictionary, prepared once for the process's packers and readers (both are read-only, so
// threads share them), and freed when the plugin is unloaded.
struct Dictionaries {
  ZSTD_CDict* compress =
      ZSTD_createCDict(packDictionary1().data(), packDictionary1().size(), kPackLevel);
  ZSTD_DDict* decompress = ZSTD_createDDict(packDictionary1().data(), packDictionary1().size());
  Dictionaries() = default;
  ~Dictionaries() {
    ZSTD_freeCDict(compress);
    ZSTD_freeDDict(decompress);
  }
  Dictionaries(const Dictionaries&) = delete;
  Dictionaries& operator=(const Dictionaries&) = delete;
};
const Dictionaries& dictionaries() {
  static const Dictionaries d;
  return d;
}

class Packer {
public:
  Packer() : ctx_(ZSTD_createCCtx()) {
    if (ctx_ == nullptr || dictionaries().compress == nullptr ||
        ZSTD_isError(ZSTD_CCtx_refCDict(ctx_, dictionaries().compress)))
      throw StoreError("cannot start zstd", false);
  }
  ~Packer() { ZSTD_freeCCtx(ctx_); }
  Packer(const Packer&) = delete;
  Packer& operator=(const Packer&) = delete;

  SqlBytes pack(const std::string& text) {
    if (text.size() > kMaxDocumentBytes)
      throw StoreError("a document of " + std::to_string(text.size()) + " bytes", false);
    std::string out(4 + ZSTD_compressBound(text.size()), '\0');
    auto n = static_cast<uint32_t>(text.size()) | kWithDictionary1;
    for (int i = 0; i < 4; ++i)
      out[i] = static_cast<char>(n >> (8 * i) & 0xff);
    std::size_t size =
        ZSTD_compress2(ctx_, out.data() + 4, out.size() - 4, text.data(), text.size());
    if (ZSTD_isError(size) != 0)
      throw StoreError(std::string("cannot compress a document: ") + ZSTD_getErrorName(size),
                       false);
    out.resize(4 + size);
    return SqlBytes{std::move(out)};
  }

private:
  ZSTD_CCtx* ctx_;
};

struct DecompressContext {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  DecompressContext() = default;
  ~DecompressContext() { ZSTD_freeDCtx(ctx); }
  DecompressContext(const DecompressContext&) = delete;
  DecompressContext& operator=(const DecompressContext&) = delete;
};

// Four bytes as a little-endian number: pack()'s size prefix, and zstd's magic number.
uint32_t littleEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// The JSON of pack() (zstd with or without the dictionary, or zlib from an older writer);
// discarded when it is not one (a damaged row is skipped, not fatal).
json unpackJson(const std::string& packed) {
  if (packed.size() < 4) return json::value_t::discarded;
  const uint32_t prefix = littleEndian32(packed.data());
  const bool withDictionary = (prefix & kWithDictionary1) != 0;
  const uint32_t n = prefix & ~kWithDictionary1;
  if (n > kMaxDocumentBytes) return json::value_t::discarded;
  std::string text(n, '\0');
  const char* body = packed.data() + 4;
  const std::size_t bodySize = packed.size() - 4;
  if (bodySize >= 4 && littleEndian32(body) == ZSTD_MAGICNUMBER) {
    // Readers and the writer run on their own threads: a context each.
    thread_local DecompressContext d;
    const ZSTD_DDict* dictionary = withDictionary ? dictionaries().decompress : nullptr;
    if (d.ctx == nullptr || (withDictionary && dictionary == nullptr))
      return json::value_t::discarded;
    std::size_t size = withDictionary ? ZSTD_decompress_usingDDict(d.ctx, text.data(), n, body,
                                                                   bodySize, dictionary)
                                      : ZSTD_decompressDCtx(d.ctx, text.data(), n, body, bodySize);
    if (ZSTD_isError(size) != 0 || size != n) return json::value_t::discarded;
  } else {
    uLongf size = n;
    if (withDictionary ||
        uncompress(reinterpret_cast<Bytef*>(text.data()), &size,
                   reinterpret_cast<const Bytef*>(body), static_cast<uLong>(bodySize)) != Z_OK ||
        size != n)
      return json::value_t::discarded;
  }
  return model::parseJson(text);
}

// stats_days: what `stats` reads instead of the tasks. Per UTC day, one row per (kind, dim,
// bucket): kind "all" (dim ""), "blame" (dim: the blamed phase), "reason" (dim: why it failed
// or is stuck; tasks with neither have no such row) and "party" (dim: the party, with
// that party's startup and part of the critical path); bucket: the startup in tenths of a second
// (-1: not complete); tasks and the critical path's seconds per phase added up. record() and
// prune() keep it in step (the old contribution out, the new in); stats over days read it, and
// the raw rows only for the partial days at the edges of the range.
constexpr int64_t kDayNanos = int64_t{86400} * 1000000000;
// A name prefix held by at most this many tasks is looked up by name (tasks_by_name, no row
// read); one held by more, along the creation index, where a page passes over at most
// tasks / kPrefixWalk index entries for each it keeps (500 at 1,000,000 tasks). Counting up to
// it is part of every such page: at 10,000 that count was about 4 ms of a 10 ms page.
constexpr int64_t kPrefixWalk = 2000;
// The startup bucket of a row: `startup` (its column, qualified or not) in tenths of a second,
// -1 when not complete.
std::string bucketOf(const std::string& startup) {
  return "coalesce(CAST(round(" + startup + " * 10) AS BIGINT), -1)";
}

// The SELECT of the stats_days rows the tasks (or task_parties) created in [$1, $2) make: kind,
// day, dim, bucket, tasks, cp sums. A party's rows carry their task's creation (written with the
// task's, in the same transaction), so the parties' rows are read alone; `raw` narrows them to one
// party at a time ($3), along task_parties_by_party.
std::string contributionSelect(const std::string& kind) {
  const std::string sums = pathColumns(", sum(", ")");
  const std::string dim = kind == "party"    ? "party"
                          : kind == "blame"  ? "blame_phase"
                          : kind == "reason" ? "reason"
                                             : "''";
  return "SELECT '" + kind + "', create_ns / " + std::to_string(kDayNanos) + ", " + dim + ", " +
         bucketOf("startup_seconds") + ", count(*)" + sums + " FROM " +
         (kind == "party" ? "task_parties" : "tasks") +
         " WHERE create_ns >= $1 AND create_ns < $2" +
         (kind == "reason" ? " AND reason <> ''" : "");
}

// The statements a recording runs, built once (the store runs thousands a minute).
struct RecordSql {
  std::string upsertTask, insertParty, taskContribution, reasonContribution, partyContribution,
      addContribution;
};

const RecordSql& recordSql() {
  static const RecordSql sql = [] {
    RecordSql r;
    const std::string cols = pathColumns(", ", "");
    // The critical path's parameters, numbered from `first`.
    auto params = [](std::size_t first) {
      std::string out;
      for (std::size_t i = 0; i < kPathPhases.size(); ++i)
        out += ", $" + std::to_string(first + i);
      return out;
    };
    std::string sets, sums;
    for (const char* phase : kPathPhases) {
      std::string c = column(phase);
      sets += ", " + c + " = excluded." + c;
      sums += ", " + c + " = stats_days." + c + " + excluded." + c;
    }
    r.upsertTask =
        "INSERT INTO tasks (task, namespace, phase, create_ns, complete, startup_seconds,"
        " blame_party, blame_phase, updated_ns, summary" +
        cols + ", reason, reason_party) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10" +
        params(11) + ", $" + std::to_string(11 + kPathPhases.size()) + ", $" +
        std::to_string(12 + kPathPhases.size()) +
        ") ON CONFLICT (task) DO UPDATE SET namespace = excluded.namespace,"
        " phase = excluded.phase, create_ns = excluded.create_ns,"
        " complete = excluded.complete, startup_seconds = excluded.startup_seconds,"
        " blame_party = excluded.blame_party, blame_phase = excluded.blame_phase,"
        " updated_ns = excluded.updated_ns, summary = excluded.summary,"
        " reason = excluded.reason, reason_party = excluded.reason_party" +
        sets;
    r.insertParty = "INSERT INTO task_parties (task, party, create_ns, startup_seconds" + cols +
                    ") VALUES ($1, $2, $3, $4" + params(5) + ")";
    const std::string day = "create_ns / " + std::to_string(kDayNanos);
    r.taskContribution = "SELECT " + day + ", blame_phase, " + bucketOf("startup_seconds") + cols +
                         " FROM tasks WHERE task = $1";
    r.reasonContribution = "SELECT " + day + ", reason, " + bucketOf("startup_seconds") + cols +
                           " FROM tasks WHERE task = $1 AND reason <> ''";
    r.partyContribution = "SELECT " + day + ", party, " + bucketOf("startup_seconds") + cols +
                          " FROM task_parties WHERE task = $1";
    r.addContribution = "INSERT INTO stats_days (kind, day, dim, bucket, tasks" + cols +
                        ") VALUES ($1, $2, $3, $4, $5" + params(6) +
                        ") ON CONFLICT (kind, day, dim, bucket) DO UPDATE SET tasks = "
                        "stats_days.tasks + excluded.tasks" +
                        sums;
    return r;
  }();
  return sql;
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

  std::vector<std::vector<bool>>
  recordTasks(const std::vector<std::vector<const Recording*>>& tasks) override {
    std::vector<std::vector<bool>> changed;
    changed.reserve(tasks.size());
    std::vector<const std::string*> names;
    for (const auto& rs : tasks) {
      if (rs.empty()) throw StoreError("a task without recordings", false);
      for (const Recording* r : rs)
        if (r->task != rs.front()->task)
          throw StoreError("recordings of several tasks together", false);
      names.push_back(&rs.front()->task);
    }
    std::sort(names.begin(), names.end(), [](auto* a, auto* b) { return *a < *b; });
    if (std::adjacent_find(names.begin(), names.end(), [](auto* a, auto* b) { return *a == *b; }) !=
        names.end())
      throw StoreError("a task twice in one transaction", false);
    if (tasks.empty()) return changed;
    Transaction tx(*db_);
    // In name order: two hosts writing overlapping batches into one PostgreSQL never wait for
    // each other's locks in a cycle.
    for (const std::string* name : names)
      db_->lockTask(*name);
    StatsDelta delta;
    for (const auto& rs : tasks)
      changed.push_back(recordOne(rs, delta));
    apply(delta);
    tx.commit();
    return changed;
  }

  void rebuildStats() override {
    Transaction tx(*db_);
    db_->run("DELETE FROM stats_days", {});
    const std::string cols = pathColumns(", ", "");
    for (const char* kind : {"all", "blame", "reason", "party"})
      db_->run("INSERT INTO stats_days (kind, day, dim, bucket, tasks" + cols + ") " +
                   contributionSelect(kind) + " GROUP BY 2, 3, 4",
               {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()});
    tx.commit();
  }

  HistoryPage list(const HistoryQuery& q) override {
    SqlParams params;
    std::string sql = listSql(q, listWhere(q, params), params);
    HistoryPage page;
    db_->run(sql, params.values, [&](const SqlRow& row) {
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
    int64_t latest = 0;
    for (const auto& r : all)
      latest = std::max(latest, r.atNanos);
    json doc = combine(std::move(all));
    doc["recordedTime"] = sdk::formatTime(latest, sdk::TimePrecision::kAsGiven);
    // The summary its row holds: what the list says of it (summarised when it was last looked
    // at, which may be after its last recording: a task stuck since).
    db_->run("SELECT summary FROM tasks WHERE task = $1", {task}, [&doc](const SqlRow& row) {
      if (json s = unpackJson(row.bytes(0)); s.is_object()) doc["summary"] = std::move(s);
    });
    return doc;
  }

  std::vector<StatsGroup> stats(int64_t since, int64_t until, const std::string& groupBy) override {
    const bool byParty = groupBy == "party" || groupBy == "day,party";
    const bool byDay = groupBy == "day" || groupBy == "day,party";
    const std::string kind = byParty                   ? "party"
                             : groupBy == "blamePhase" ? "blame"
                             : groupBy == "reason"     ? "reason"
                                                       : "all";
    // Per group: tasks and critical-path sums, and tasks per startup bucket.
    struct Acc {
      std::string day, dim;
      int64_t tasks = 0;
      std::array<double, kPathPhases.size()> cp{};
      std::map<int64_t, int64_t> buckets;
    };
    std::map<std::pair<std::string, std::string>, Acc> acc;
    auto add = [&](const SqlRow& row) { // day, dim, bucket, tasks, cp...
      int64_t tasks = row.integer(3);
      if (tasks == 0) return;
      std::string day = byDay ? dayText(row.integer(0)) : std::string();
      std::string dim = kind == "all" ? std::string() : row.text(1);
      Acc& a = acc[{day, dim}];
      a.day = day;
      a.dim = dim;
      a.tasks += tasks;
      a.buckets[row.integer(2)] += tasks;
      for (std::size_t i = 0; i < kPathPhases.size(); ++i)
        a.cp[i] += row.isNull(4 + int(i)) ? 0 : row.real(4 + int(i));
    };
    // Whole days from stats_days; the partial days at either end from the tasks themselves.
    int64_t firstDay = (since + kDayNanos - 1) / kDayNanos, lastDay = until / kDayNanos;
    std::optional<std::vector<std::string>> parties; // looked up once, when a raw read needs them
    if (since < 0 || firstDay >= lastDay) {
      raw(kind, since, until, add, parties);
    } else {
      db_->run("SELECT day, dim, bucket, tasks" + pathColumns(", ", "") +
                   " FROM stats_days WHERE kind = $1 AND day >= $2 AND day < $3",
               {kind, firstDay, lastDay}, add);
      raw(kind, since, firstDay * kDayNanos, add, parties);
      raw(kind, lastDay * kDayNanos, until, add, parties);
    }
    std::vector<StatsGroup> out;
    for (auto& [k, a] : acc) {
      StatsGroup g;
      g.day = a.day;
      g.party = byParty ? a.dim : "";
      g.key = groupBy == "day,party" ? a.day + "/" + a.dim
              : groupBy == "day"     ? a.day
              : groupBy.empty()      ? "all"
              : a.dim.empty()        ? "none"
                                     : a.dim;
      g.tasks = static_cast<std::size_t>(a.tasks);
      int64_t complete = 0;
      for (const auto& [bucket, n] : a.buckets)
        if (bucket >= 0) complete += n;
      g.complete = static_cast<std::size_t>(complete);
      if (complete > 0) {
        const auto& buckets = a.buckets;
        auto rank = [&buckets, complete](double p) {
          auto want = std::max<int64_t>(
              static_cast<int64_t>(std::ceil(p * static_cast<double>(complete))), 1);
          int64_t seen = 0;
          for (const auto& [bucket, n] : buckets)
            if (bucket >= 0 && (seen += n) >= want) return static_cast<double>(bucket) / 10;
          return static_cast<double>(buckets.rbegin()->first) / 10;
        };
        g.p50 = rank(0.5);
        g.p90 = rank(0.9);
        g.p99 = rank(0.99);
      }
      for (std::size_t i = 0; i < kPathPhases.size(); ++i)
        if (std::abs(a.cp[i]) > 1e-9) g.phaseSeconds.emplace_back(kPathPhases[i], a.cp[i]);
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
    db_->run("DELETE FROM jobs WHERE create_ns < $1", {before});
    if (doomed.empty()) return 0;
    Transaction tx(*db_);
    StatsDelta delta;
    for (const auto& task : doomed)
      for (const auto& row : contributions(task))
        delta.add(row, -1);
    apply(delta);
    db_->run("DELETE FROM stats_days WHERE tasks <= 0", {});
    for (const auto& task : doomed)
      for (const char* table : {"tasks", "task_parties", "recordings"})
        db_->run(std::string("DELETE FROM ") + table + " WHERE task = $1", {task});
    tx.commit();
    return doomed.size();
  }

  void recordJobs(const std::vector<JobRecord>& jobs) override {
    if (jobs.empty()) return;
    Transaction tx(*db_);
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (const JobRecord& j : jobs)
      db_->run("INSERT INTO jobs (job, namespace, phase, create_ns, updated_ns, object)"
               " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (job) DO UPDATE SET"
               " namespace = excluded.namespace, phase = excluded.phase,"
               " create_ns = excluded.create_ns, updated_ns = excluded.updated_ns,"
               " object = excluded.object",
               {j.job, j.namespaceName, j.phase, j.createNanos, now,
                packer_.pack(model::dumpJson(j.object))});
    tx.commit();
  }

  std::vector<JobRecord> jobs(std::size_t limit, bool withObjects) override {
    std::vector<JobRecord> out;
    db_->run(std::string("SELECT job, namespace, phase, create_ns") +
                 (withObjects ? ", object" : "") +
                 " FROM jobs ORDER BY create_ns DESC, job DESC LIMIT $1",
             {static_cast<int64_t>(limit)}, [&](const SqlRow& row) {
               JobRecord& j = out.emplace_back();
               j.job = row.text(0);
               j.namespaceName = row.text(1);
               j.phase = row.text(2);
               j.createNanos = row.integer(3);
               if (withObjects) j.object = unpackJson(row.bytes(4));
             });
    return out;
  }

  std::optional<JobRecord> job(const std::string& name) override {
    std::optional<JobRecord> out;
    db_->run(
        "SELECT job, namespace, phase, create_ns, object FROM jobs WHERE job = $1", {name},
        [&](const SqlRow& row) {
          json object = unpackJson(row.bytes(4));
          if (object.is_discarded()) return; // a damaged row: as if not kept
          out = JobRecord{row.text(0), row.text(1), row.text(2), row.integer(3), std::move(object)};
        });
    return out;
  }

  std::size_t count() override {
    int64_t n = 0;
    db_->run("SELECT count(*) FROM tasks", {}, [&](const SqlRow& row) { n = row.integer(0); });
    return static_cast<std::size_t>(n);
  }

  std::string describe() const override { return db_->describe(); }

private:
  // The stats_days rows of the tasks created in [from, to), computed from the tasks: day, dim,
  // bucket, tasks, cp sums. The parties' rows are read a party at a time, each one range of
  // task_parties_by_party (party, create_ns, task): a partial day's rows lie together there and in
  // the table, where through the tasks' creation each would be looked up by its name, all over the
  // primary key (PostgreSQL at 1,000,000 tasks, the first query to touch task_parties: 475 to 532
  // ms for stats by party over 30 days that way).
  void raw(const std::string& kind, int64_t from, int64_t to,
           const std::function<void(const SqlRow&)>& add,
           std::optional<std::vector<std::string>>& parties) {
    if (from >= to) return;
    std::string select = contributionSelect(kind);
    // Drop the leading kind column: the same columns as stats_days' rows.
    select.replace(0, select.find(',') + 1, "SELECT");
    if (kind != "party") {
      db_->run(select + " GROUP BY 1, 2, 3", {from, to}, add);
      return;
    }
    if (!parties) parties = partyNames();
    for (const std::string& party : *parties)
      db_->run(select + " AND party = $3 GROUP BY 1, 2, 3", {from, to, party}, add);
  }

  // Every party with a row, one descent of task_parties_by_party each (a loose index scan: both
  // databases find a min() along an index without reading the rows between).
  std::vector<std::string> partyNames() {
    std::vector<std::string> out;
    db_->run("WITH RECURSIVE ps(party) AS (SELECT min(party) FROM task_parties UNION ALL"
             " SELECT (SELECT min(party) FROM task_parties WHERE party > ps.party) FROM ps"
             " WHERE ps.party IS NOT NULL) SELECT party FROM ps WHERE party IS NOT NULL",
             {}, [&out](const SqlRow& row) { out.push_back(row.text(0)); });
    return out;
  }

  // What a transaction's tasks change in stats_days, row by row: one upsert a row however
  // many of the transaction's tasks moved in or out of it (a second's tasks share their day's;
  // a prune's batch, its days').
  struct StatsDelta {
    struct Sums {
      int64_t tasks = 0;
      std::array<double, kPathPhases.size()> path{};
    };
    std::map<std::tuple<std::string, int64_t, std::string, int64_t>, Sums> rows;
    // One task's row (kind, day, dim, bucket, cp...) in (sign 1) or out (-1).
    void add(const std::vector<SqlValue>& row, int sign) {
      Sums& sums = rows[{std::get<std::string>(row[0]), std::get<int64_t>(row[1]),
                         std::get<std::string>(row[2]), std::get<int64_t>(row[3])}];
      sums.tasks += sign;
      for (std::size_t i = 0; i < kPathPhases.size(); ++i)
        sums.path[i] += std::get<double>(row[4 + i]) * sign;
    }
  };

  // A statement's parameters, numbered as both databases take them ($1, $2, ...).
  struct SqlParams {
    std::vector<SqlValue> values;
    std::string add(SqlValue v) {
      values.push_back(std::move(v));
      return "$" + std::to_string(values.size());
    }
  };

  // The list's WHERE clause over the walked index (the party's, with a party; else the tasks').
  std::string listWhere(const HistoryQuery& q, SqlParams& params) {
    const bool byParty = !q.party.empty();
    const std::string t = byParty ? "p." : "t.";
    std::string where = " WHERE 1 = 1";
    if (byParty) where += " AND p.party = " + params.add(q.party);
    // The slowest: walked down the startup index; the creation range only filters ("+" keeps
    // the planner of either database from walking the creation index and sorting instead).
    std::string created = (q.slowest ? "+" : "") + t + "create_ns";
    if (q.since) where += " AND " + created + " >= " + params.add(*q.since);
    if (q.until) where += " AND " + created + " < " + params.add(*q.until);
    if (!q.phase.empty()) where += " AND t.phase = " + params.add(q.phase);
    if (!q.blamePhase.empty()) where += " AND t.blame_phase = " + params.add(q.blamePhase);
    if (!q.reason.empty()) where += " AND t.reason = " + params.add(q.reason);
    if (q.minStartupSeconds)
      where += " AND t.startup_seconds >= " + params.add(*q.minStartupSeconds);
    if (!q.prefix.empty()) {
      // Names are DNS labels: '~' sorts after every character they may hold. A prefix few tasks
      // have is walked by name (then sorted); a common one along the creation index, filtered.
      std::string to = q.prefix + "~";
      int64_t named = 0;
      db_->run("SELECT count(*) FROM (SELECT 1 FROM tasks WHERE task >= $1 AND task < $2 LIMIT " +
                   std::to_string(kPrefixWalk + 1) + ") n",
               {q.prefix, to}, [&](const SqlRow& row) { named = row.integer(0); });
      // (`|| ''` keeps the planner off the name index, as "+" does for a number.)
      std::string name = t + "task" + (named > kPrefixWalk ? " || ''" : "");
      where +=
          " AND " + name + " >= " + params.add(q.prefix) + " AND " + name + " < " + params.add(to);
    }
    if (q.after && !q.slowest) {
      // (create_ns, task) < (c, n), written so that both databases take a range of the index.
      std::string c = params.add(q.after->first);
      std::string n = params.add(q.after->second);
      where += " AND " + t + "create_ns <= " + c + " AND (" + t + "create_ns < " + c + " OR " + t +
               "task < " + n + ")";
    }
    return where;
  }

  // The list's statement: a page (one row more than asked, for the next page's token) newest
  // first, or the slowest.
  static std::string listSql(const HistoryQuery& q, const std::string& where, SqlParams& params) {
    const bool byParty = !q.party.empty();
    const std::string t = byParty ? "p." : "t.";
    // A page whose filters are all on the walked index's columns (the party, the creation, the
    // name) walks the index alone for its keys, then reads the page's rows: the rows the filters
    // pass over are never read (PostgreSQL filters an index-only scan on the index's tuples, and
    // only then fetches a row; SQLite's covering index likewise). The rows are joined on the
    // creation and the name (task_parties' create_ns is written with the task's, in the same
    // transaction): the page's rows are then neighbours in the creation index, a few of its
    // pages, where the name's index scatters them over a hundred (PostgreSQL, 1,000,000 tasks,
    // pages not in its buffers: 100 pages read and 8 ms, against 8 pages and 1.3 ms).
    const bool keysFirst = !q.slowest && q.phase.empty() && q.blamePhase.empty() &&
                           q.reason.empty() && !q.minStartupSeconds;
    const std::string columns = "SELECT t.task, t.namespace, t.phase, t.create_ns, t.summary";
    const std::string rows =
        std::string(" FROM ") +
        (byParty ? "task_parties p JOIN tasks t ON t.task = p.task" : "tasks t") + where;
    if (q.slowest)
      return columns + rows +
             " AND t.startup_seconds IS NOT NULL ORDER BY t.startup_seconds DESC, t.task DESC "
             "LIMIT " +
             params.add(static_cast<int64_t>(q.limit));
    if (keysFirst)
      return columns + " FROM (SELECT " + t + "create_ns AS create_ns, " + t +
             "task AS task FROM " + (byParty ? "task_parties p" : "tasks t") + where +
             " ORDER BY " + t + "create_ns DESC, " + t + "task DESC LIMIT " +
             params.add(static_cast<int64_t>(q.limit + 1)) +
             ") k JOIN tasks t ON t.create_ns = k.create_ns AND t.task = k.task ORDER BY "
             "k.create_ns DESC, k.task DESC";
    return columns + rows + " ORDER BY " + t + "create_ns DESC, " + t + "task DESC LIMIT " +
           params.add(static_cast<int64_t>(q.limit + 1));
  }

  // The task's documents, combined where they are (combinedView): a recording with nothing
  // stored before it is its own document and is not copied (two copies and their frees were
  // about a fifth of the writer's instructions a task); merged or stored ones are kept here.
  struct TaskDocuments {
    std::vector<StoredRecording> kept; // reserved up front: `parts` points into it
    std::vector<RecordingRef> parts;
    void keep(StoredRecording s) {
      kept.push_back(std::move(s));
      parts.push_back({kept.back().recorder, kept.back().atNanos, &kept.back().document});
    }
  };

  // One task's recordings, merged into what each recorder had stored, and the task refreshed;
  // its stats_days rows into `delta`. Whether each recording changed what was stored.
  std::vector<bool> recordOne(const std::vector<const Recording*>& rs, StatsDelta& delta) {
    std::vector<bool> changed(rs.size(), false);
    const Recording& first = *rs.front();
    // Every recorder's stored document of the task, in one read.
    bool known = false;
    std::vector<StoredRecording> stored = recordings(first.task, {}, &known);
    TaskDocuments docs;
    docs.kept.reserve(rs.size() + stored.size());
    bool any = false;
    for (std::size_t i = 0; i < rs.size(); ++i) {
      changed[i] = storeRecording(*rs[i], stored, docs);
      any = any || changed[i] || (rs[i]->refresh && known);
    }
    if (!any) return changed;
    // What the task counted in stats_days before (nothing when it is new: a task's rows go with
    // its last recording).
    std::vector<std::vector<SqlValue>> old;
    if (known) old = contributions(first.task);
    // The other recorders' documents, as stored.
    for (auto& s : stored)
      docs.keep(std::move(s));
    writeTaskRows(first, docs.parts, known);
    // The old rows out and the new in, as differences: a row that did not change (a second
    // domain's recording of a task often changes none) costs nothing.
    std::vector<std::vector<SqlValue>> now = contributions(first.task);
    for (auto& r : old) {
      auto same = std::find(now.begin(), now.end(), r);
      if (same != now.end())
        now.erase(same);
      else
        delta.add(r, -1);
    }
    for (auto& r : now)
      delta.add(r, 1);
    return changed;
  }

  // Merges `r` into what its recorder had stored (taken out of `stored`) and writes it unless
  // that changes nothing; its document goes to `docs`. Whether it changed what was stored.
  bool storeRecording(const Recording& r, std::vector<StoredRecording>& stored,
                      TaskDocuments& docs) {
    auto was = std::find_if(stored.begin(), stored.end(),
                            [&r](const StoredRecording& s) { return s.recorder == r.recorder; });
    std::optional<json> merged;
    if (was != stored.end()) {
      // A text recording is parsed to be merged (a recorder's later recordings of a task).
      const json incoming = r.text ? model::parseJson(r.text->json) : json();
      merged = mergeRecording(was->document, r.text ? incoming : r.document);
      if (*merged == was->document) {
        docs.keep(std::move(*was));
        stored.erase(was);
        return false;
      }
      stored.erase(was);
    }
    // mergeRecording(null, r.document) is the recording itself: as it is, text or document.
    const std::string dumped = merged   ? model::dumpJson(*merged)
                               : r.text ? ""
                                        : model::dumpJson(r.document);
    SqlBytes packed = packer_.pack(!merged && r.text ? r.text->json : dumped);
    db_->run("INSERT INTO recordings (task, recorder, at_ns, document) VALUES ($1, $2, $3, $4)"
             " ON CONFLICT (task, recorder) DO UPDATE SET at_ns = excluded.at_ns,"
             " document = excluded.document",
             {r.task, r.recorder, r.atNanos, std::move(packed)});
    if (merged)
      docs.keep({r.recorder, r.atNanos, std::move(*merged)});
    else if (r.text)
      docs.parts.push_back({r.recorder, r.atNanos, nullptr, &*r.text});
    else
      docs.parts.push_back({r.recorder, r.atNanos, &r.document});
    return true;
  }

  // The task's row and its parties' rows, from the combined documents of its recorders.
  void writeTaskRows(const Recording& first, const std::vector<RecordingRef>& parts, bool known) {
    // The summary is dated by the latest recording, which the view has found.
    const CombinedView view = combinedView(parts);
    const int64_t latest = std::max<int64_t>(0, parts[view.latestIndex].atNanos);
    TaskRow row =
        taskRowOf(view, std::max(latest, first.refresh ? first.atNanos : 0), first.stuckAfterNanos);
    std::vector<SqlValue> p = {first.task,
                               first.namespaceName,
                               row.phase,
                               row.createNanos,
                               int64_t{row.complete ? 1 : 0},
                               optional(row.startupSeconds),
                               row.blameParty,
                               row.blamePhase,
                               latest,
                               packer_.pack(model::dumpJson(row.summary))};
    for (double s : row.path)
      p.emplace_back(s);
    p.emplace_back(row.reason);
    p.emplace_back(row.reasonParty);
    const RecordSql& sql = recordSql();
    db_->run(sql.upsertTask, p);
    if (known) db_->run("DELETE FROM task_parties WHERE task = $1", {first.task});
    for (const auto& party : row.parties) {
      std::vector<SqlValue> pp = {first.task, party.name, row.createNanos,
                                  optional(party.startupSeconds)};
      for (double s : party.path)
        pp.emplace_back(s);
      db_->run(sql.insertParty, pp);
    }
  }

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

  // The stats_days rows one task makes: (kind, day, dim, bucket, cp...), each for one task.
  std::vector<std::vector<SqlValue>> contributions(const std::string& task) {
    std::vector<std::vector<SqlValue>> out;
    // day, dim, bucket, cp... as rows of `kind`, with `dim` for the row's own when given.
    auto take = [&out](const char* kind, const std::optional<std::string>& dim) {
      return [&out, kind, dim](const SqlRow& row) {
        std::vector<SqlValue> v = {std::string(kind), row.integer(0), dim ? *dim : row.text(1),
                                   row.integer(2)};
        for (std::size_t i = 0; i < kPathPhases.size(); ++i)
          v.emplace_back(row.real(3 + static_cast<int>(i)));
        out.push_back(std::move(v));
      };
    };
    // The task's row counts twice: once in "all", once under its blamed phase.
    db_->run(recordSql().taskContribution, {task}, [&](const SqlRow& row) {
      take("all", std::string())(row);
      take("blame", std::nullopt)(row);
    });
    db_->run(recordSql().reasonContribution, {task}, take("reason", std::nullopt));
    db_->run(recordSql().partyContribution, {task}, take("party", std::nullopt));
    return out;
  }

  // Writes what `delta` sums up: one upsert a row that changed.
  void apply(const StatsDelta& delta) {
    for (const auto& [key, sums] : delta.rows) {
      if (sums.tasks == 0 &&
          std::all_of(sums.path.begin(), sums.path.end(), [](double s) { return s == 0; }))
        continue; // the tasks left this row as it was
      std::vector<SqlValue> row = {std::get<0>(key), std::get<1>(key), std::get<2>(key),
                                   std::get<3>(key), sums.tasks};
      for (double s : sums.path)
        row.emplace_back(s);
      db_->run(recordSql().addContribution, row);
    }
  }

  // The task's recordings, but those of the recorders `except` names (their documents are not
  // read). `known`, when given: whether the task has any (even one that cannot be read).
  std::vector<StoredRecording> recordings(const std::string& task,
                                          const std::vector<std::string>& except = {},
                                          bool* known = nullptr) {
    std::vector<StoredRecording> all;
    db_->run("SELECT recorder, at_ns, document FROM recordings WHERE task = $1", {task},
             [&](const SqlRow& row) {
               if (known != nullptr) *known = true;
               std::string recorder = row.text(0);
               if (std::find(except.begin(), except.end(), recorder) != except.end()) return;
               json d = unpackJson(row.bytes(2));
               if (!d.is_discarded())
                 all.push_back({std::move(recorder), row.integer(1), std::move(d)});
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
      if (version == static_cast<int64_t>(m.size())) {
        for (const Index& index : kIndexes)
          if (!db_->hasIndex(index.name)) db_->script(index.create);
        tx.commit();
        return;
      }
      std::string sql = m[static_cast<std::size_t>(version)];
      for (auto at = sql.find("NAME_TYPE"); at != std::string::npos; at = sql.find("NAME_TYPE"))
        sql.replace(at, 9, db_->nameType());
      db_->script(sql);
      db_->run("INSERT INTO schema_migrations (version, applied_ns) VALUES ($1, $2)",
               {version + 1,
                static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count())});
      tx.commit();
    }
  }

  std::unique_ptr<SqlDb> db_;
  Packer packer_;
};

} // namespace

std::unique_ptr<HistoryStore> openStore(const std::string& database, const std::string& password,
                                        bool readOnly) {
  bool postgres = database.rfind("postgresql://", 0) == 0 || database.rfind("postgres://", 0) == 0;
  if (postgres) return std::make_unique<SqlStore>(openPostgres(database, password), readOnly);
  return std::make_unique<SqlStore>(openSqlite(database, readOnly), readOnly);
}

} // namespace kuscia_host::plugins::history
