// SqlDb on SQLite: a file in WAL mode (readers never wait for the writer; a kill -9 during a
// write leaves the last committed state), synchronous=NORMAL (durable against a crash of the
// process; a power loss may lose the last transactions, never consistency), created with mode
// 0600 (SQLite gives its -wal and -shm files the same).
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <vector>

#include "history_store.h"
#include "sql_db.h"

namespace kuscia_host::plugins::history {

namespace {

bool transientCode(int code) {
  int primary = code & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_FULL ||
         primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY;
}

class SqliteRow final : public SqlRow {
public:
  explicit SqliteRow(sqlite3_stmt* s) : s_(s) {}
  bool isNull(int c) const override { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  int64_t integer(int c) const override { return sqlite3_column_int64(s_, c); }
  double real(int c) const override { return sqlite3_column_double(s_, c); }
  std::string text(int c) const override {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(s_, c));
  }
  std::string bytes(int c) const override {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(s_, c));
    return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(s_, c));
  }

private:
  sqlite3_stmt* s_;
};

class SqliteDb final : public SqlDb {
public:
  SqliteDb(const std::string& path, bool readOnly) : path_(path) {
    // Created owner-only before SQLite opens it: task names are not for every local user.
    int fd =
        ::open(path.c_str(), readOnly ? O_RDONLY | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
      throw StoreError("cannot open the history database " + path + ": " + std::strerror(errno),
                       errno == ENOSPC || errno == EINTR);
    ::close(fd);
    int rc = sqlite3_open_v2(
        path.c_str(), &db_,
        (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw StoreError("cannot open the history database " + path + ": " + why, transientCode(rc));
    }
    sqlite3_busy_timeout(db_, 5000);
    sqlite3_extended_result_codes(db_, 1);
    try {
      // Two connections turning a new file to WAL at once: one is refused at once (SQLite does
      // not wait where waiting could deadlock), and its connection must not outlive the throw.
      if (!readOnly) script("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    } catch (...) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    }
  }
  ~SqliteDb() override {
    for (auto& [sql, stmt] : cache_)
      sqlite3_finalize(stmt.stmt);
    sqlite3_close(db_);
  }
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  void script(const std::string& sql) override {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      std::string why = err != nullptr ? err : sqlite3_errstr(rc);
      sqlite3_free(err);
      fail(rc, why);
    }
  }

  int64_t run(const std::string& sql, const std::vector<SqlValue>& params,
              const std::function<void(const SqlRow&)>& row) override {
    const Statement& st = prepared(sql);
    sqlite3_stmt* s = st.stmt;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    for (std::size_t i = 0; i < params.size(); ++i) {
      int at = i < st.slot.size() ? st.slot[i] : 0;
      if (at == 0) continue; // not used by this statement
      const SqlValue& v = params[i];
      int rc = SQLITE_OK;
      if (std::holds_alternative<int64_t>(v))
        rc = sqlite3_bind_int64(s, at, std::get<int64_t>(v));
      else if (std::holds_alternative<double>(v))
        rc = sqlite3_bind_double(s, at, std::get<double>(v));
      else if (const auto* b = std::get_if<SqlBytes>(&v))
        rc = sqlite3_bind_blob(s, at, b->data.data(), static_cast<int>(b->data.size()),
                               SQLITE_STATIC);
      else if (std::holds_alternative<std::string>(v))
        rc = sqlite3_bind_text(s, at, std::get<std::string>(v).data(),
                               static_cast<int>(std::get<std::string>(v).size()), SQLITE_STATIC);
      else
        rc = sqlite3_bind_null(s, at);
      if (rc != SQLITE_OK) fail(rc, sqlite3_errmsg(db_));
    }
    SqliteRow r(s);
    for (;;) {
      int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        std::string why = sqlite3_errmsg(db_);
        sqlite3_reset(s);
        fail(rc, why);
      }
      if (row) row(r);
    }
    sqlite3_reset(s);
    return sqlite3_changes64(db_);
  }

  // Prepared once, as every statement run() runs: sqlite3_exec() would parse them each time.
  void begin() override { run("BEGIN IMMEDIATE", {}, {}); }
  void commit() override { run("COMMIT", {}, {}); }
  void rollback() noexcept override {
    if (sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void lockTask(const std::string& /*task*/) override {}
  std::string describe() const override { return "sqlite " + path_; }
  std::string nameType() const override { return "TEXT"; } // BINARY: byte order
  bool hasIndex(const std::string& name) override {
    int64_t n = 0;
    run("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = $1", {name},
        [&n](const SqlRow& row) { n = row.integer(0); });
    return n > 0;
  }

private:
  struct Statement {
    sqlite3_stmt* stmt = nullptr;
    std::vector<int> slot; // $N's parameter index at N - 1 (0: not in the statement)
  };
  const Statement& prepared(const std::string& sql) {
    if (auto it = cache_.find(sql); it != cache_.end()) return it->second;
    Statement st;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &st.stmt, nullptr);
    if (rc != SQLITE_OK) fail(rc, sqlite3_errmsg(db_));
    // Where each $N binds, looked up once rather than by name on every run.
    for (int at = 1, n = sqlite3_bind_parameter_count(st.stmt); at <= n; ++at) {
      const char* name = sqlite3_bind_parameter_name(st.stmt, at);
      if (name == nullptr || name[0] != '$') continue;
      std::size_t number = 0;
      auto [end, ec] = std::from_chars(name + 1, name + std::strlen(name), number);
      if (ec != std::errc() || *end != '\0' || number == 0) continue;
      if (st.slot.size() < number) st.slot.resize(number, 0);
      st.slot[number - 1] = at;
    }
    return cache_.emplace(sql, std::move(st)).first->second;
  }
  [[noreturn]] void fail(int rc, const std::string& why) const {
    throw StoreError("sqlite " + path_ + ": " + why, transientCode(rc));
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  std::map<std::string, Statement> cache_; // prepared once per statement text
};

} // namespace

std::unique_ptr<SqlDb> openSqlite(const std::string& path, bool readOnly) {
  return std::make_unique<SqliteDb>(path, readOnly);
}

} // namespace kuscia_host::plugins::history
