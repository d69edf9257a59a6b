// A real PostgreSQL server for tests, started by the test itself: initdb in a temporary
// directory, listening on a Unix socket in that directory only (no TCP port), as an unprivileged
// user when the tests run as root (PostgreSQL refuses root). Debian's server binaries
// (/usr/lib/postgresql/<version>/bin) are used; without them, available() says why.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kuscia_host::test {

class PostgresServer {
public:
  PostgresServer() {
    namespace fs = std::filesystem;
    if (fs::exists("/usr/lib/postgresql"))
      for (const auto& v : fs::directory_iterator("/usr/lib/postgresql"))
        if (fs::exists(v.path() / "bin" / "initdb")) bin_ = (v.path() / "bin").string();
    if (bin_.empty()) {
      why_ = "no PostgreSQL server binaries under /usr/lib/postgresql (Debian's postgresql)";
      return;
    }
    char tmpl[] = "/tmp/kh-pg-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      why_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    // The server's user must own the directory; the tests (root) can still read it.
    if (geteuid() == 0) {
      as_ = "setpriv --reuid=nobody --regid=nogroup --clear-groups -- ";
      std::system(("chown nobody:nogroup " + dir_).c_str());
    }
    chmod(dir_.c_str(), 0755);
    if (!sh(bin_ + "/initdb -D " + dir_ + "/data -U kh -A trust --no-sync -E UTF8 >" + dir_ +
            "/initdb.log 2>&1")) {
      why_ = "initdb failed: " + log("initdb.log");
      return;
    }
    ok_ = start();
  }
  ~PostgresServer() {
    stop();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  bool available() const { return ok_; }
  const std::string& why() const { return why_; }
  // libpq's URI of one of the server's databases, as its superuser.
  std::string uri(const std::string& db = "postgres") const {
    return "postgresql://kh@/" + db + "?host=" + dir_;
  }

  bool start() {
    bool up =
        sh(bin_ + "/pg_ctl -D " + dir_ + "/data -l " + dir_ + "/server.log -w -t 60 -o \"-k " +
           dir_ + " -c listen_addresses='' -c fsync=off\" start >/dev/null 2>&1");
    if (!up) why_ = "the server did not start: " + log("server.log");
    running_ = up;
    return up;
  }
  void stop() {
    if (running_) sh(bin_ + "/pg_ctl -D " + dir_ + "/data -m fast -w stop >/dev/null 2>&1");
    running_ = false;
  }
  // Runs SQL with psql (the server's own client), for a test to look at the database.
  std::string psql(const std::string& sql, const std::string& db = "postgres") const {
    std::string out = dir_ + "/psql.out";
    std::string cmd = bin_ + "/psql -X -A -t -q -h " + dir_ + " -U kh -d " + db + " -c \"" + sql +
                      "\" >" + out + " 2>&1";
    std::system(cmd.c_str());
    return log("psql.out");
  }

private:
  bool sh(const std::string& cmd) const {
    std::string line = as_.empty() ? cmd : as_ + "sh -c '" + escape(cmd) + "'";
    return std::system(line.c_str()) == 0;
  }
  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s)
      out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out;
  }
  std::string log(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string bin_, dir_, as_, why_;
  bool ok_ = false, running_ = false;
};

} // namespace kuscia_host::test
