// The little of a SQL database that task-history's store needs, so that one store (sql_store.cc)
// runs on SQLite and on PostgreSQL alike. Statements use $1, $2 ... for parameters, which both
// understand; their text is the same for both.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kuscia_host::plugins::history {

// Binary data (SQLite BLOB, PostgreSQL BYTEA).
struct SqlBytes {
  std::string data;
  bool operator==(const SqlBytes&) const = default;
};
using SqlValue = std::variant<std::nullptr_t, int64_t, double, std::string, SqlBytes>;

// One row of a result; columns by index, as the statement lists them.
class SqlRow {
public:
  virtual ~SqlRow() = default;
  virtual bool isNull(int column) const = 0;
  virtual int64_t integer(int column) const = 0;
  virtual double real(int column) const = 0;
  virtual std::string text(int column) const = 0;
  virtual std::string bytes(int column) const = 0;
};

class SqlDb {
public:
  virtual ~SqlDb() = default;
  // Runs statements without parameters or results (schema, pragmas); several at once.
  virtual void script(const std::string& sql) = 0;
  // Runs one statement; `row` is called for each result row. The rows changed.
  virtual int64_t run(const std::string& sql, const std::vector<SqlValue>& params,
                      const std::function<void(const SqlRow&)>& row = {}) = 0;
  // A transaction that may write: SQLite takes the write lock at once (BEGIN IMMEDIATE).
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  // Serialises writers of one task across connections (PostgreSQL: an advisory lock held until
  // the transaction ends); SQLite's write lock already does.
  virtual void lockTask(const std::string& task) = 0;
  virtual std::string describe() const = 0;
  // The column type of names compared by ranges (the list's name prefix): byte order in both
  // (PostgreSQL's default collation may ignore punctuation, which would break a prefix range).
  virtual std::string nameType() const = 0;
  // Whether the schema holds an index of this name.
  virtual bool hasIndex(const std::string& name) = 0;
};

// `readOnly`: the file must exist; nothing is written.
std::unique_ptr<SqlDb> openSqlite(const std::string& path, bool readOnly = false);
std::unique_ptr<SqlDb> openPostgres(const std::string& uri, const std::string& password);

} // namespace kuscia_host::plugins::history
