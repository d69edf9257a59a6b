// SqlDb on PostgreSQL through libpq. Parameters go as text (the server types them from the
// statement); a lost connection is reset before the next statement and reported as transient.
#include <libpq-fe.h>

#include <charconv>
#include <memory>

#include "history_store.h"
#include "sql_db.h"

namespace kuscia_host::plugins::history {

namespace {

// SQLSTATE classes worth retrying: connection (08), transaction rollback (40), insufficient
// resources such as a full disk (53), operator intervention such as a shutdown (57).
bool transientState(const char* state) {
  if (state == nullptr) return true; // no answer at all: the connection went
  std::string_view s(state);
  return s.substr(0, 2) == "08" || s.substr(0, 2) == "40" || s.substr(0, 2) == "53" ||
         s.substr(0, 2) == "57";
}

class PgRow final : public SqlRow {
public:
  PgRow(PGresult* r, int row) : r_(r), row_(row) {}
  bool isNull(int c) const override { return PQgetisnull(r_, row_, c) != 0; }
  int64_t integer(int c) const override {
    int64_t v = 0;
    const char* p = PQgetvalue(r_, row_, c);
    std::from_chars(p, p + PQgetlength(r_, row_, c), v);
    return v;
  }
  double real(int c) const override {
    double v = 0;
    const char* p = PQgetvalue(r_, row_, c);
    std::from_chars(p, p + PQgetlength(r_, row_, c), v);
    return v;
  }
  std::string text(int c) const override {
    return std::string(PQgetvalue(r_, row_, c), static_cast<std::size_t>(PQgetlength(r_, row_, c)));
  }
  // BYTEA comes as text in the hex format ("\\x" and two digits a byte), the server's default.
  std::string bytes(int c) const override {
    std::string_view hex(PQgetvalue(r_, row_, c),
                         static_cast<std::size_t>(PQgetlength(r_, row_, c)));
    std::string out;
    if (hex.substr(0, 2) != "\\x") return out;
    auto digit = [](char d) { return d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10; };
    out.reserve((hex.size() - 2) / 2);
    for (std::size_t i = 2; i + 1 < hex.size(); i += 2)
      out += static_cast<char>(digit(hex[i]) << 4 | digit(hex[i + 1]));
    return out;
  }

private:
  PGresult* r_;
  int row_;
};

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

class PgDb final : public SqlDb {
public:
  PgDb(const std::string& uri, const std::string& password) {
    // The URI is expanded as dbname; the password, when given apart, is added to it.
    const char* keys[] = {"dbname", password.empty() ? nullptr : "password", nullptr};
    const char* values[] = {uri.c_str(), password.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, 1);
    if (conn_ == nullptr) throw StoreError("postgresql: out of memory", true);
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string why = PQerrorMessage(conn_);
      PQfinish(conn_);
      conn_ = nullptr;
      while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
        why.pop_back();
      throw StoreError("cannot connect to the history database: " + why, true);
    }
    describe_ = "postgresql host=" + std::string(PQhost(conn_)) + " port=" + PQport(conn_) +
                " dbname=" + PQdb(conn_) + " user=" + PQuser(conn_);
    script("SET client_min_messages = warning");
  }
  ~PgDb() override { PQfinish(conn_); }
  PgDb(const PgDb&) = delete;
  PgDb& operator=(const PgDb&) = delete;

  void script(const std::string& sql) override {
    ensure();
    Result r(PQexec(conn_, sql.c_str()), &PQclear);
    check(r.get());
  }

  int64_t run(const std::string& sql, const std::vector<SqlValue>& params,
              const std::function<void(const SqlRow&)>& row) override {
    ensure();
    std::vector<std::string> text(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const SqlValue& v = params[i];
      if (std::holds_alternative<int64_t>(v)) {
        text[i] = std::to_string(std::get<int64_t>(v));
      } else if (std::holds_alternative<double>(v)) {
        char buf[32];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, std::get<double>(v));
        text[i] = ec == std::errc() ? std::string(buf, end) : "0";
      } else if (const auto* b = std::get_if<SqlBytes>(&v)) {
        static constexpr char kHex[] = "0123456789abcdef";
        text[i].reserve(2 + 2 * b->data.size());
        text[i] = "\\x";
        for (unsigned char ch : b->data) {
          text[i] += kHex[ch >> 4];
          text[i] += kHex[ch & 15];
        }
      } else if (std::holds_alternative<std::string>(v)) {
        text[i] = std::get<std::string>(v);
      } else {
        continue; // NULL
      }
      values[i] = text[i].c_str();
    }
    Result r(PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                          values.data(), nullptr, nullptr, 0),
             &PQclear);
    check(r.get());
    if (row)
      for (int i = 0; i < PQntuples(r.get()); ++i)
        row(PgRow(r.get(), i));
    const char* changed = PQcmdTuples(r.get());
    return changed != nullptr && *changed != '\0' ? std::stoll(changed) : 0;
  }

  void begin() override { script("BEGIN"); }
  void commit() override { script("COMMIT"); }
  void rollback() noexcept override {
    if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK &&
        PQtransactionStatus(conn_) != PQTRANS_IDLE)
      PQclear(PQexec(conn_, "ROLLBACK"));
  }
  void lockTask(const std::string& task) override {
    run("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {task}, {});
  }
  std::string describe() const override { return describe_; }
  std::string nameType() const override { return "TEXT COLLATE \"C\""; }
  bool hasIndex(const std::string& name) override {
    int64_t n = 0;
    run("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1",
        {name}, [&n](const SqlRow& row) { n = row.integer(0); });
    return n > 0;
  }

private:
  void ensure() {
    if (PQstatus(conn_) == CONNECTION_OK) return;
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) fail(nullptr);
  }
  void check(PGresult* r) {
    ExecStatusType s = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) return;
    fail(r);
  }
  [[noreturn]] void fail(PGresult* r) {
    const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    std::string why = r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
      why.pop_back();
    bool lost = PQstatus(conn_) != CONNECTION_OK;
    throw StoreError(describe_ + ": " + why, lost || transientState(state));
  }

  PGconn* conn_ = nullptr;
  std::string describe_;
};

} // namespace

std::unique_ptr<SqlDb> openPostgres(const std::string& uri, const std::string& password) {
  return std::make_unique<PgDb>(uri, password);
}

} // namespace kuscia_host::plugins::history
