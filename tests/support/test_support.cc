#include "test_support.h"

#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace kuscia_host::test {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

TempDir::TempDir() {
  std::random_device rd;
  auto base = std::filesystem::temp_directory_path();
  for (int i = 0; i < 100; ++i) {
    auto p = base / ("kh-test-" + std::to_string(rd()));
    std::error_code ec;
    if (std::filesystem::create_directory(p, ec)) {
      std::filesystem::permissions(p, std::filesystem::perms::owner_all, ec);
      path_ = p;
      return;
    }
  }
  throw std::runtime_error("cannot create a temp dir");
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

HttpResult httpRequest(unsigned short port, const std::string& method, const std::string& target,
                       const std::string& body, const std::string& contentType,
                       const std::map<std::string, std::string>& headers) {
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(10));
  stream.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, "127.0.0.1");
  if (!contentType.empty()) req.set(http::field::content_type, contentType);
  for (const auto& [k, v] : headers)
    req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.skip(method == "HEAD"); // a HEAD response announces a body it does not send
  http::read(stream, buffer, parser);
  auto& res = parser.get();
  HttpResult r;
  r.status = static_cast<int>(res.result_int());
  r.body = res.body();
  for (const auto& f : res) {
    std::string name(f.name_string());
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return r;
}

std::string rawExchange(unsigned short port, const std::string& bytes) {
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(5));
  stream.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  beast::error_code writeError; // the server may answer and stop reading before all is sent
  boost::asio::write(stream, boost::asio::buffer(bytes), writeError);
  std::string out;
  char buf[4096];
  for (;;) {
    beast::error_code ec;
    std::size_t n = stream.read_some(boost::asio::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
  }
  return out;
}

Child::Child(const std::vector<std::string>& argv, const std::string& outDir) {
  static int counter = 0;
  ++counter;
  outPath_ = outDir + "/child-" + std::to_string(counter) + ".out";
  errPath_ = outDir + "/child-" + std::to_string(counter) + ".err";
  pid_ = ::fork();
  if (pid_ == 0) {
    int out = ::open(outPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = ::open(errPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> args;
    args.reserve(argv.size());
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
}

std::optional<int> Child::wait(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (std::chrono::steady_clock::now() > until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Child::signal(int sig) const {
  ::kill(pid_, sig);
}

std::optional<std::string> Child::waitForStderr(const std::string& needle, double seconds) const {
  std::optional<std::string> found;
  eventually(
      [&] {
        std::string e = err();
        auto pos = e.find(needle);
        if (pos == std::string::npos) return false;
        auto end = e.find('\n', pos);
        if (end == std::string::npos) return false;
        found = e.substr(pos + needle.size(), end - pos - needle.size());
        return true;
      },
      seconds);
  return found;
}

struct LineStream::Impl {
  boost::asio::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
};

LineStream::LineStream(unsigned short port, const std::string& target)
    : impl_(std::make_unique<Impl>()) {
  impl_->stream.expires_after(std::chrono::seconds(10));
  impl_->stream.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> req(http::verb::get, target, 11);
  req.set(http::field::host, "127.0.0.1");
  http::write(impl_->stream, req);
  impl_->parser.body_limit(boost::none);
  http::read_header(impl_->stream, impl_->buffer, impl_->parser);
  status_ = static_cast<int>(impl_->parser.get().result_int());
  for (const auto& f : impl_->parser.get()) {
    std::string name(f.name_string());
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    headers_[name] = std::string(f.value());
  }
}

LineStream::~LineStream() {
  beast::error_code ec;
  impl_->stream.socket().shutdown(tcp::socket::shutdown_both, ec);
}

std::optional<std::string> LineStream::next(double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    std::string& body = impl_->parser.get().body();
    pending_ += body;
    body.clear();
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (timedOut_) return std::nullopt;
    if (ended_ || impl_->parser.is_done()) {
      ended_ = true;
      return std::nullopt;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    // Synchronous reads ignore beast's timeouts: read asynchronously and run the loop for the
    // time left. A read cut short leaves the parser unusable, so the stream counts as ended.
    bool done = false;
    beast::error_code ec;
    http::async_read_some(impl_->stream, impl_->buffer, impl_->parser,
                          [&](beast::error_code e, std::size_t) {
                            ec = e;
                            done = true;
                          });
    impl_->io.restart();
    impl_->io.run_for(left);
    if (!done) {
      impl_->stream.cancel();
      impl_->io.restart();
      impl_->io.run();
      timedOut_ = true;
      return std::nullopt;
    }
    if (ec) ended_ = true;
  }
}

RunResult runCommand(const std::vector<std::string>& argv) {
  TempDir dir;
  Child c(argv, dir.path().string());
  auto code = c.wait(60);
  return {code.value_or(-1), c.out(), c.err()};
}

} // namespace kuscia_host::test
