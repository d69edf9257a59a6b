// Helpers shared by the host tests: temp dirs, files, a real HTTP client, child processes.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kuscia_host::test {

class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
  std::filesystem::path path_;
};

std::string readFile(const std::string& path);
void writeFile(const std::string& path, const std::string& content);

struct HttpResult {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers; // lowercase names
};

// One request over a fresh loopback connection with Boost.Beast.
HttpResult httpRequest(unsigned short port, const std::string& method, const std::string& target,
                       const std::string& body = "", const std::string& contentType = "",
                       const std::map<std::string, std::string>& headers = {});

// A streaming GET (a Kubernetes watch): the response header, then the body line by line.
class LineStream {
public:
  LineStream(unsigned short port, const std::string& target);
  ~LineStream();
  LineStream(const LineStream&) = delete;
  LineStream& operator=(const LineStream&) = delete;
  int status() const { return status_; }
  const std::map<std::string, std::string>& headers() const { return headers_; }
  // The next complete line (without the newline); nullopt on timeout or end of stream. After a
  // timeout the stream is unusable and every later call returns nullopt.
  std::optional<std::string> next(double seconds = 5);
  // True once the server ended the stream (last chunk or close).
  bool ended() const { return ended_; }

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int status_ = 0;
  std::map<std::string, std::string> headers_;
  std::string pending_;
  bool ended_ = false;
  bool timedOut_ = false;
};
inline HttpResult httpGet(unsigned short port, const std::string& target) {
  return httpRequest(port, "GET", target);
}
// Writes raw bytes and returns everything read until the server closes (or 5 s pass).
std::string rawExchange(unsigned short port, const std::string& bytes);

// A child process with stdout and stderr captured to files.
class Child {
public:
  Child(const std::vector<std::string>& argv, const std::string& outDir);
  ~Child();
  pid_t pid() const { return pid_; }
  // Waits up to `seconds`; nullopt on timeout. Exit code, or 128+signal.
  std::optional<int> wait(double seconds);
  void signal(int sig) const;
  std::string out() const { return readFile(outPath_); }
  std::string err() const { return readFile(errPath_); }
  // Polls stderr until `needle` appears; returns the text after it up to the line's end.
  std::optional<std::string> waitForStderr(const std::string& needle, double seconds) const;

private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string outPath_, errPath_;
};

// Runs to completion (max 60 s): {exit code, stdout, stderr}.
struct RunResult {
  int code;
  std::string out;
  std::string err;
};
RunResult runCommand(const std::vector<std::string>& argv);

// Polls `pred` every 5 ms until it holds or `seconds` pass.
template <class Pred> bool eventually(Pred pred, double seconds = 10);

} // namespace kuscia_host::test

#include <chrono>
#include <thread>

template <class Pred> bool kuscia_host::test::eventually(Pred pred, double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}
