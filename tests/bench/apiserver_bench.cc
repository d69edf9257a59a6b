// Benchmark of the embedded API server (not a test: it prints figures and ratios, asserts nothing).
//
//   watch: W watchers follow U pod updates (merge PATCHes over one keep-alive connection).
//          Baseline: the same updates with no watcher, measured in the same run.
//          Reports write rate with/without watchers, events/s delivered, and each watcher's lag
//          behind the last write.
//   list:  P pods, one unpaged LIST against a paged LIST (limit 500) of the same pods.
//
// usage: apiserver_bench [--updates U] [--watchers W] [--pods P] [--list-pods L]
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/server.h"
#include "bench_support.h"
#include "logging/logging.h"
#include "runtime/runtime.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using kuscia_host::bench::Connection;
using nlohmann::json;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class WatchFollower {
public:
  WatchFollower(unsigned short port, const std::string& target, std::size_t expected)
      : expected_(expected), stream_(io_) {
    stream_.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
    http::request<http::empty_body> req(http::verb::get, target, 11);
    req.set(http::field::host, "127.0.0.1");
    http::write(stream_, req);
    parser_.body_limit(boost::none);
    http::read_header(stream_, buffer_, parser_);
    thread_ = std::thread([this] { run(); });
  }
  ~WatchFollower() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_.load(); }
  Clock::time_point finishedAt() const { return finishedAt_; }
  std::size_t seen() const { return seen_.load(); }

private:
  void run() {
    while (seen_ < expected_) {
      beast::error_code ec;
      http::read_some(stream_, buffer_, parser_, ec);
      auto& body = parser_.get().body();
      seen_ += static_cast<std::size_t>(std::count(body.begin(), body.end(), '\n'));
      body.clear();
      if (ec) break;
    }
    finishedAt_ = Clock::now();
    done_ = true;
  }

  std::size_t expected_;
  boost::asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
  std::atomic<std::size_t> seen_{0};
  std::atomic<bool> done_{false};
  Clock::time_point finishedAt_;
  std::thread thread_;
};

struct Args {
  std::size_t updates = 100000;
  std::size_t watchers = 8;
  std::size_t pods = 1000;
  std::size_t listPods = 50000;
};

json podTemplate() {
  std::ifstream in(KH_SOURCE_DIR "/tests/fixtures/pod.json");
  json p = json::parse(in);
  for (const char* k : {"resourceVersion", "uid", "creationTimestamp"})
    p["metadata"].erase(k);
  p["metadata"]["namespace"] = "bench";
  return p;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

// One round of `updates` PATCHes; returns writes per second.
double patchRound(unsigned short port, std::size_t updates, std::size_t pods, int round) {
  Connection c(port);
  auto start = Clock::now();
  for (std::size_t i = 0; i < updates; ++i) {
    std::string target = "/api/v1/namespaces/bench/pods/bench-" + std::to_string(i % pods);
    std::string patch = R"({"metadata":{"labels":{"round":")" + std::to_string(round) + "-" +
                        std::to_string(i) + R"("}}})";
    if (c.request(http::verb::patch, target, patch, "application/merge-patch+json") != 200) {
      std::fprintf(stderr, "patch failed: %s\n", c.body().c_str());
      std::exit(1);
    }
  }
  return static_cast<double>(updates) / secondsSince(start);
}

} // namespace

int run(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    std::size_t v = std::stoul(argv[i + 1]);
    if (k == "--updates")
      a.updates = v;
    else if (k == "--watchers")
      a.watchers = v;
    else if (k == "--pods")
      a.pods = v;
    else if (k == "--list-pods")
      a.listPods = v;
    else {
      std::fprintf(stderr, "usage: %s [--updates U] [--watchers W] [--pods P] [--list-pods L]\n",
                   argv[0]);
      return 2;
    }
  }
  std::ostringstream logOut;
  kuscia_host::LogManager logs(kuscia_host::LogFormat::kText, spdlog::level::warn, logOut);
  kuscia_host::SystemClock clock;
  kuscia_host::Runtime runtime(2);
  kuscia_host::apiserver::ServerOptions options;
  options.historyLimit = 1000;
  options.api.watchQueueCapacity = a.updates + 16; // followers here never fall behind by design
  kuscia_host::apiserver::ApiServer server(runtime.io(), clock, logs.logger("apiserver"), options);
  auto ep = server.start();
  if (!ep) {
    std::fprintf(stderr, "%s\n", ep.error().c_str());
    return 1;
  }
  runtime.start();
  unsigned short port = ep->port();
  Connection setup(port);
  setup.request(http::verb::post, "/api/v1/namespaces", R"({"metadata":{"name":"bench"}})");
  json tmpl = podTemplate();
  for (std::size_t i = 0; i < std::max(a.pods, a.listPods); ++i) {
    tmpl["metadata"]["name"] = "bench-" + std::to_string(i);
    setup.request(http::verb::post, "/api/v1/namespaces/bench/pods", tmpl.dump());
  }
  std::printf("embedded API server benchmark (pod objects of %zu bytes)\n", tmpl.dump().size());

  // --- watch ---
  double baseline = patchRound(port, a.updates, a.pods, 0);
  setup.request(http::verb::get, "/api/v1/namespaces/bench/pods?limit=1");
  std::string rv = json::parse(setup.body())["metadata"]["resourceVersion"];
  std::vector<std::unique_ptr<WatchFollower>> followers;
  for (std::size_t w = 0; w < a.watchers; ++w)
    followers.push_back(std::make_unique<WatchFollower>(
        port, "/api/v1/namespaces/bench/pods?watch=true&resourceVersion=" + rv, a.updates));
  auto writeStart = Clock::now();
  double withWatchers = patchRound(port, a.updates, a.pods, 1);
  auto lastWrite = Clock::now();
  auto deadline = lastWrite + std::chrono::seconds(120);
  while (Clock::now() < deadline &&
         !std::all_of(followers.begin(), followers.end(), [](auto& f) { return f->done(); }))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<double> lagMs;
  double slowest = 0;
  for (auto& f : followers) {
    if (!f->done()) {
      std::printf("  a watcher saw only %zu of %zu events\n", f->seen(), a.updates);
      continue;
    }
    double lag = std::chrono::duration<double, std::milli>(f->finishedAt() - lastWrite).count();
    lagMs.push_back(std::max(0.0, lag));
    slowest =
        std::max(slowest, std::chrono::duration<double>(f->finishedAt() - writeStart).count());
  }
  followers.clear();
  std::printf("watch: %zu watchers following %zu pod updates\n", a.watchers, a.updates);
  std::printf("  writes/s, no watcher (baseline):   %10.0f\n", baseline);
  std::printf("  writes/s, %zu watchers:             %10.0f  (ratio to baseline %.2f)\n",
              a.watchers, withWatchers, withWatchers / baseline);
  std::printf("  events/s delivered, all watchers:  %10.0f  (%.0f per watcher)\n",
              static_cast<double>(a.updates * lagMs.size()) / slowest,
              static_cast<double>(a.updates) / slowest);
  std::printf("  watcher lag after the last write:  p50 %.1f ms, max %.1f ms\n",
              percentile(lagMs, 0.5), percentile(lagMs, 1.0));

  // --- list ---
  auto t0 = Clock::now();
  setup.request(http::verb::get, "/api/v1/namespaces/bench/pods");
  std::size_t items = json::parse(setup.body())["items"].size(); // parsed in both, for fairness
  double unpaged = secondsSince(t0);
  std::size_t bytes = setup.body().size();
  t0 = Clock::now();
  std::string cont;
  std::size_t pages = 0;
  std::size_t pagedItems = 0;
  do {
    setup.request(http::verb::get, "/api/v1/namespaces/bench/pods?limit=500" +
                                       (cont.empty() ? "" : "&continue=" + cont));
    auto page = json::parse(setup.body());
    pagedItems += page["items"].size();
    cont = page["metadata"].value("continue", "");
    ++pages;
  } while (!cont.empty());
  double paged = secondsSince(t0);
  std::printf("list: %zu pods (%.1f MB)\n", items, static_cast<double>(bytes) / 1e6);
  std::printf("  unpaged LIST:            %8.1f ms  (%.0f items/s)\n", unpaged * 1e3,
              static_cast<double>(items) / unpaged);
  std::printf(
      "  paged LIST (limit 500):  %8.1f ms over %zu pages, %zu items (ratio to unpaged %.2f)\n",
      paged * 1e3, pages, pagedItems, paged / unpaged);
  server.stop();
  runtime.stop();
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apiserver_bench: %s\n", e.what());
  }
  return 1;
}
