// task-history's storage: one interface, SQLite (a file, the default) and PostgreSQL (libpq)
// behind it. The schema is versioned; open() applies what is missing, in one transaction each.
//
// What is stored:
//  - recordings: each recording domain's (party's) document of a task, key (task, recorder);
//    a recording is merged into what was stored (history_doc.h), so a restarted host, a replayed
//    watch or two instances of one domain never make duplicates and never lose a fact;
//  - tasks: one row per task name, the documents of every recorder combined and summarised
//    (kuscia_model/timeline_summary.h), with the columns the list filters on;
//  - task_parties: the parties of each task (the namespaces of its entries), for `party`;
//  - jobs: each KusciaJob as last seen (its object: what the job's view is computed from, with
//    its tasks' stored documents, kuscia_model/job_view.h).
// The task's key is its name: in p2p every party's cluster has the task under one name (with
// its own UID), so recordings of several hosts sharing a database make one history record.
//
// Not thread-safe: one store per worker thread (history_writer.h), one per request elsewhere.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <kuscia_model/timeline_text.h>

namespace kuscia_host::plugins::history {

// A storage call failed; `transient`: worth retrying (busy, disk full, connection lost).
class StoreError : public std::runtime_error {
public:
  StoreError(const std::string& what, bool transient)
      : std::runtime_error(what), transient_(transient) {}
  bool transient() const { return transient_; }

private:
  bool transient_;
};

struct Recording {
  std::string task, namespaceName, recorder;
  int64_t atNanos = 0;     // when the document was taken
  nlohmann::json document; // the timeline document (kuscia_model/timeline.h), no summary
  // The plugin's recordings: the same document as text, with the times of its entries, and
  // `document` null. A store writes the text as it is and summarises the times; it parses the
  // text only to merge it into a recording it holds of the same recorder.
  std::optional<model::TimelineText> text;
  // A task not ready whose longest wait began this long before the recording is stuck.
  int64_t stuckAfterNanos = model::timeline::kStuckAfterNanos;
  // The task's row is summarised again even when the recording changes nothing stored (time
  // passed: a task may be stuck now).
  bool refresh = false;
};

// GET /api/v1/history's filters. Times in nanoseconds since the epoch.
struct HistoryQuery {
  std::optional<int64_t> since, until; // the task's creation in [since, until)
  std::string party, phase, blamePhase, prefix;
  std::string reason; // why it failed or is stuck (failure.h's names)
  std::optional<double> minStartupSeconds;
  std::size_t limit = 100;
  // The slowest complete tasks first (by startup seconds), one page: no keyset.
  bool slowest = false;
  // Keyset: list after this task (created, name), newest first.
  std::optional<std::pair<int64_t, std::string>> after;
};

// (nlohmann::json's implicit noexcept move: see TaskRow in history_doc.h.)
// NOLINTNEXTLINE(bugprone-exception-escape)
struct HistoryItem {
  std::string task, namespaceName, phase;
  int64_t createNanos = 0;
  nlohmann::json summary;
};

struct HistoryPage {
  std::vector<HistoryItem> items;
  std::optional<std::pair<int64_t, std::string>> next; // more follow after this one
};

// One group of `stats`, aggregated by the database: no task row is read into memory.
struct StatsGroup {
  std::string key, day, party; // day "YYYY-MM-DD" (UTC) and party when grouped by them
  std::size_t tasks = 0, complete = 0;
  // Of the startup seconds of the complete tasks, to the tenth of a second.
  std::optional<double> p50, p90, p99;
  std::vector<std::pair<std::string, double>> phaseSeconds; // critical-path seconds per phase
};

// A KusciaJob as task-history keeps it: its object's metadata (name, namespace,
// creationTimestamp, the kuscia-host/observed annotation), spec and status.
// (nlohmann::json's implicit noexcept move: see TaskRow in history_doc.h.)
// NOLINTNEXTLINE(bugprone-exception-escape)
struct JobRecord {
  std::string job, namespaceName, phase;
  int64_t createNanos = 0;
  nlohmann::json object;
};

class HistoryStore {
public:
  virtual ~HistoryStore() = default;
  // Several tasks in one transaction (the writer's batch): for each task, its recordings, each
  // of another recorder, merged into the one stored for that recorder, and the task refreshed
  // once; whether each recording changed what was stored. A task appears once.
  virtual std::vector<std::vector<bool>>
  recordTasks(const std::vector<std::vector<const Recording*>>& tasks) = 0;
  // One task's recordings (several domains', as one host takes them), in one transaction.
  std::vector<bool> recordTogether(const std::vector<const Recording*>& rs) {
    return recordTasks({rs}).front();
  }
  // One recording; false when nothing changed.
  bool record(const Recording& r) { return recordTogether({&r}).front(); }
  virtual HistoryPage list(const HistoryQuery& q) = 0;
  // The task's document, its recordings combined, with the summary its row holds; nullopt when
  // unknown.
  virtual std::optional<nlohmann::json> document(const std::string& task) = 0;
  // The tasks created in [since, until), grouped by `groupBy`: "" (one group "all"), "party" (a
  // task counts in each of its parties, with that party's startup and part of the critical
  // path), "blamePhase", "reason" (the tasks that failed or are stuck, by why), "day" (UTC) or
  // "day,party". Groups in key order.
  virtual std::vector<StatsGroup> stats(int64_t since, int64_t until,
                                        const std::string& groupBy) = 0;
  // Deletes at most `batch` tasks created before `before`, or beyond the newest `maxTasks`
  // (0: no cap), oldest first, and the jobs created before `before`; the tasks deleted.
  virtual std::size_t prune(int64_t before, std::size_t maxTasks, std::size_t batch) = 0;
  virtual std::size_t count() = 0;
  // Keeps each job as it is now (the latest replaces what was kept), in one transaction.
  virtual void recordJobs(const std::vector<JobRecord>& jobs) = 0;
  // The kept jobs, newest first (by creation, then name), at most `limit`; `object` only with
  // `withObjects`.
  virtual std::vector<JobRecord> jobs(std::size_t limit, bool withObjects = false) = 0;
  // One kept job; nullopt when unknown.
  virtual std::optional<JobRecord> job(const std::string& name) = 0;
  // Recomputes the per-day figures `stats` reads from the tasks (after a bulk load).
  virtual void rebuildStats() = 0;
  // What the storage is, for logs ("sqlite /var/lib/...", "postgresql host=... dbname=...");
  // never a password.
  virtual std::string describe() const = 0;
};

// Opens `database`: a postgresql:// or postgres:// URI, else a SQLite file path (created, mode
// 0600). `password`: PostgreSQL's, when not in the URI. Applies the schema's missing migrations;
// `readOnly` (a command line reading history): creates and migrates nothing, and refuses a
// database whose schema is not this version's. Throws StoreError.
std::unique_ptr<HistoryStore> openStore(const std::string& database, const std::string& password,
                                        bool readOnly = false);

} // namespace kuscia_host::plugins::history
