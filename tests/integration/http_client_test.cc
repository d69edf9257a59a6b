// The Kubernetes HTTP client against the embedded API server: plain, TLS with a bearer token,
// keep-alive reuse, and the failures an operator must be able to read.
#include "kube/http_client.h"

#include <boost/asio/post.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "apiserver/server.h"
#include "httpd/tls.h"
#include "logging/logging.h"
#include "runtime/runtime.h"
#include "test_support.h"

namespace kuscia_host::kube {
namespace {

class HttpClientTest : public ::testing::Test {
protected:
  void start(bool tls) {
    apiserver::ServerOptions o;
    o.tls = tls;
    o.faultInjection = true;
    o.token = "t0ken";
    server_ =
        std::make_unique<apiserver::ApiServer>(runtime_.io(), clock_, logs_.logger("apiserver"), o);
    ASSERT_TRUE(server_->start().ok());
    runtime_.start();
    ASSERT_TRUE(server_->writeKubeconfig(dir_.file("kc")).ok());
    auto access = loadKubeconfig(dir_.file("kc"));
    ASSERT_TRUE(access.ok()) << access.error();
    access_ = *access;
  }
  void TearDown() override {
    if (server_) server_->stop();
    oneThread_.stop();
    runtime_.stop();
  }
  // Sends the requests from one handler on the client's io_context, as the writes of one turn of
  // the event loop are made, and waits for every answer (in the order given). The client runs on
  // one thread, as the host's does by default: on more, the turn's flush may run on another
  // thread while the turn still sends, and its requests share connections as they come.
  // With a grid, the answers are read at its points (HttpRequest::readGrid).
  std::vector<Result<HttpResponse>> callTogether(BeastHttpClient& c,
                                                 const std::vector<std::string>& targets,
                                                 std::chrono::milliseconds grid) {
    std::vector<std::promise<Result<HttpResponse>>> promises(targets.size());
    boost::asio::post(oneThread_.io(), [&] {
      for (std::size_t i = 0; i < targets.size(); ++i) {
        HttpRequest r{"GET", targets[i]};
        r.pipelined = true;
        r.readGrid = grid;
        c.send(std::move(r),
               [&p = promises[i]](Result<HttpResponse> res) { p.set_value(std::move(res)); });
      }
    });
    std::vector<Result<HttpResponse>> out;
    for (auto& p : promises)
      out.push_back(p.get_future().get());
    return out;
  }
  static Result<HttpResponse> call(BeastHttpClient& c, HttpRequest r) {
    std::promise<Result<HttpResponse>> p;
    c.send(std::move(r), [&](Result<HttpResponse> res) { p.set_value(std::move(res)); });
    return p.get_future().get();
  }
  std::shared_ptr<BeastHttpClient> client(ClusterAccess a, Runtime* on = nullptr) {
    auto c = BeastHttpClient::create((on != nullptr ? on : &runtime_)->io(), std::move(a));
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error());
    return c.ok() ? *c : nullptr;
  }

  // start(), a client, and the namespace the watches below follow (nullptr when one failed).
  std::shared_ptr<BeastHttpClient> startWithAlice(bool tls) {
    start(tls);
    auto c = client(access_);
    if (!c) return nullptr;
    auto created = call(*c, {"POST", "/api/v1/namespaces", R"({"metadata":{"name":"alice"}})"});
    EXPECT_TRUE(created.ok() && created->status == 201)
        << (created ? created->body : created.error());
    return created.ok() && created->status == 201 ? c : nullptr;
  }

  std::ostringstream logOut_;
  LogManager logs_{LogFormat::kText, spdlog::level::warn, logOut_};
  SystemClock clock_;
  Runtime runtime_{2};
  Runtime oneThread_{1}; // the pipelining tests' clients (see callTogether)
  std::unique_ptr<apiserver::ApiServer> server_;
  test::TempDir dir_;
  ClusterAccess access_;

  // Pipelined requests, their answers read as they come (grid 0) or on a grid.
  void pipelinedRequestsShareConnections(std::chrono::milliseconds grid);
  void pipelinedRequestsOnClosedConnections(std::chrono::milliseconds grid);

  // A watch read on a grid (HttpRequest::readGrid): the first event after a quiet spell comes at
  // once, and what comes within the grid's step is read and delivered together. Between reads
  // the socket is out of the reactor and put back (over TLS too: the TLS state stays the
  // stream's).
  void readOnAGrid(bool tls);
};

TEST_F(HttpClientTest, PlainRequestsReuseOneConnection) {
  start(false);
  auto c = client(access_);
  for (int i = 0; i < 5; ++i) {
    auto r = call(*c, {"GET", "/version"});
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->body.find("\"major\":\"1\""), std::string::npos);
  }
  EXPECT_EQ(c->connectionsOpened(), 1u);
  auto created = call(*c, {"POST", "/api/v1/namespaces", R"({"metadata":{"name":"alice"}})"});
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->status, 201);
  auto patched = call(*c, {"PATCH", "/api/v1/namespaces/alice",
                           R"({"metadata":{"labels":{"a":"b"}}})", "application/merge-patch+json"});
  EXPECT_EQ(patched->status, 200) << patched->body;
  // The answer's header names in lower case, whatever case the server wrote them in.
  EXPECT_EQ(patched->headers["content-type"], "application/json");
  EXPECT_EQ(patched->headers.count("Content-Type"), 0u);
  EXPECT_EQ(call(*c, {"GET", "/api/v1/namespaces/nope"})->status, 404);
  // A request line or header a space or line break would split is never sent.
  for (const HttpRequest& bad :
       {HttpRequest{"GET", "/api/v1/namespaces/a b"}, HttpRequest{"GET", "/api/v1\r\nX: y"},
        HttpRequest{"GE T", "/version"},
        HttpRequest{"PATCH", "/api/v1/namespaces/alice", "{}", "application/json\nX: y"}}) {
    auto r = call(*c, bad);
    ASSERT_FALSE(r.ok()) << bad.method << " " << bad.target;
    EXPECT_NE(r.error().find("refusing to send a malformed request line or header"),
              std::string::npos)
        << r.error();
  }
  EXPECT_EQ(call(*c, {"GET", "/version"})->status, 200); // and the client goes on
}

TEST_F(HttpClientTest, PipelinedRequestsMadeTogetherShareAConnectionAndKeepTheirAnswers) {
  pipelinedRequestsShareConnections(std::chrono::milliseconds(0));
}

TEST_F(HttpClientTest, PipelinedRequestsAnsweredOnAGridShareAConnectionAndKeepTheirAnswers) {
  pipelinedRequestsShareConnections(std::chrono::milliseconds(20));
}

void HttpClientTest::pipelinedRequestsShareConnections(std::chrono::milliseconds grid) {
  ASSERT_TRUE(startWithAlice(false));
  oneThread_.start();
  auto c = client(access_, &oneThread_);
  ASSERT_TRUE(c);
  // Enough for three batches.
  const int n = static_cast<int>(2 * BeastHttpClient::kPipelineDepth + 8);
  std::vector<std::string> targets;
  for (int i = 0; i < n; ++i)
    targets.push_back("/api/v1/namespaces/ns-" + std::to_string(i));
  targets[7] = "/api/v1/namespaces/alice";
  auto expectAnswers = [&](const std::vector<Result<HttpResponse>>& answers) {
    for (std::size_t i = 0; i < targets.size(); ++i) {
      ASSERT_TRUE(answers[i].ok()) << answers[i].error();
      if (targets[i].ends_with("/alice")) {
        EXPECT_EQ(answers[i]->status, 200);
        EXPECT_NE(answers[i]->body.find(R"("name":"alice")"), std::string::npos);
      } else {
        // Each its own answer, in the order asked, though they shared connections.
        EXPECT_EQ(answers[i]->status, 404);
        EXPECT_NE(answers[i]->body.find(R"("name":")" + targets[i].substr(19) + "\""),
                  std::string::npos)
            << answers[i]->body;
      }
      EXPECT_EQ(answers[i]->headers.at("content-type"), "application/json");
    }
  };
  for (int round = 0; round < 2; ++round) {
    expectAnswers(callTogether(*c, targets, grid));
    // Three connections, not one a request; and the second round finds them kept alive.
    EXPECT_EQ(c->connectionsOpened(), 3u) << "round " << round;
  }
  // More at once than the connections may carry: the batches beyond them wait for one to be
  // free, and every request is answered.
  for (int i = n; i < 700; ++i)
    targets.push_back("/api/v1/namespaces/ns-" + std::to_string(i));
  expectAnswers(callTogether(*c, targets, grid));
  EXPECT_EQ(c->connectionsOpened(), BeastHttpClient::kMaxConnections);
}

// Against another server than the host's own (Python's http.server): a server that closes the
// connection after an answer, one that closed a kept-alive connection meanwhile, and one that
// closes it with requests unanswered.
TEST_F(HttpClientTest, PipelinedRequestsAClosedConnectionLeftAreSentAgainOrFailed) {
  pipelinedRequestsOnClosedConnections(std::chrono::milliseconds(0));
}

TEST_F(HttpClientTest, PipelinedRequestsOnAGridAClosedConnectionLeftAreSentAgainOrFailed) {
  pipelinedRequestsOnClosedConnections(std::chrono::milliseconds(20));
}

void HttpClientTest::pipelinedRequestsOnClosedConnections(std::chrono::milliseconds grid) {
  test::Child peer({KH_SOURCE_DIR "/tests/fixtures/http_peer.py"}, dir_.path().string());
  auto port = peer.waitForStderr("listening on ", 10);
  ASSERT_TRUE(port) << peer.err();
  oneThread_.start();
  ClusterAccess a;
  a.scheme = "http";
  a.host = "127.0.0.1";
  a.port = *port;
  a.server = "http://127.0.0.1:" + *port;
  auto c = client(a, &oneThread_);
  ASSERT_TRUE(c);
  auto bodies = [](const std::vector<Result<HttpResponse>>& answers) {
    std::vector<std::string> out;
    for (const auto& r : answers)
      out.push_back(r.ok() ? std::to_string(r->status) + " " + r->body : "error: " + r.error());
    return out;
  };
  // "Connection: close" after the second: the two it did not take up go on a new connection.
  EXPECT_EQ(bodies(callTogether(*c, {"/a", "/close-b", "/c", "/d"}, grid)),
            (std::vector<std::string>{"200 /a", "200 /close-b", "200 /c", "200 /d"}));
  EXPECT_EQ(c->connectionsOpened(), 2u);
  // Answered as kept alive, then closed: the next batch fails on it before any answer and is
  // sent once more on a new connection.
  EXPECT_EQ(bodies(callTogether(*c, {"/quiet-close-e"}, grid)),
            (std::vector<std::string>{"200 /quiet-close-e"}));
  EXPECT_EQ(bodies(callTogether(*c, {"/f", "/g"}, grid)),
            (std::vector<std::string>{"200 /f", "200 /g"}));
  EXPECT_EQ(c->connectionsOpened(), 3u);
  // Closed with two unanswered after an answer: whether the server took them up is unknown, so
  // they fail, naming each request (the API client's retries decide).
  auto answers = bodies(callTogether(*c, {"/h", "/die-i", "/j"}, grid));
  EXPECT_EQ(answers[0], "200 /h");
  for (const char* target : {"/die-i", "/j"}) {
    const auto& r = answers[target[1] == 'd' ? 1 : 2];
    EXPECT_EQ(r.rfind("error: GET " + a.server + target + ": ", 0), 0u) << r;
  }
  // What the server read, connection by connection, in order.
  EXPECT_EQ(peer.out(), "1 /a\n1 /close-b\n2 /c\n2 /d\n2 /quiet-close-e\n3 /f\n3 /g\n3 /h\n"
                        "3 /die-i\n");
  EXPECT_EQ(call(*c, {"GET", "/k"})->body, "/k"); // and the client goes on
}

// Answers read on a grid wait for its next point, however soon they came: then they are read
// with the watches' events, in the one wake-up the grid's point costs anyway.
TEST_F(HttpClientTest, AnswersReadOnAGridAreReadAtItsNextPoint) {
  ASSERT_TRUE(startWithAlice(false));
  oneThread_.start();
  auto c = client(access_, &oneThread_);
  ASSERT_TRUE(c);
  const auto step = std::chrono::milliseconds(200);
  for (int round = 0; round < 3; ++round) {
    const auto sent = std::chrono::steady_clock::now();
    const auto d = std::chrono::duration_cast<std::chrono::steady_clock::duration>(step);
    const auto point = std::chrono::steady_clock::time_point((sent.time_since_epoch() / d + 1) * d);
    auto answers = callTogether(*c, {"/version", "/api/v1/namespaces/alice"}, step);
    const auto answered = std::chrono::steady_clock::now();
    ASSERT_TRUE(answers[0].ok() && answers[1].ok());
    EXPECT_EQ(answers[1]->status, 200);
    // Not before the point (the server answers within a few milliseconds), and at it: the next
    // points are allowed for a machine busy with other work (a late wake-up is not a wrong one).
    EXPECT_GE(answered, point) << "round " << round;
    EXPECT_LT(answered, point + 3 * step) << "round " << round;
    std::this_thread::sleep_for(std::chrono::milliseconds(70)); // another phase of the grid
  }
}

TEST_F(HttpClientTest, AStreamReadOnAGridDeliversWhatCameMeanwhileTogether) {
  readOnAGrid(false);
}

TEST_F(HttpClientTest, AStreamReadOnAGridOverTlsDeliversWhatCameMeanwhileTogether) {
  readOnAGrid(true);
}

void HttpClientTest::readOnAGrid(bool tls) {
  auto c = startWithAlice(tls);
  ASSERT_TRUE(c);
  std::mutex mu;
  std::string seen;
  std::size_t deliveries = 0;
  auto added = [&] {
    std::lock_guard lock(mu);
    std::size_t n = 0;
    for (auto at = seen.find("\"ADDED\""); at != std::string::npos;
         at = seen.find("\"ADDED\"", at + 1))
      ++n;
    return n;
  };
  HttpRequest watch{"GET", "/api/v1/namespaces/alice/configmaps?watch=true"};
  watch.readGrid = std::chrono::milliseconds(400);
  auto stream = c->stream(
      std::move(watch), boost::asio::make_strand(runtime_.io()),
      [&](std::string_view bytes) {
        std::lock_guard lock(mu);
        seen.append(bytes);
        ++deliveries;
      },
      [](Result<HttpResponse>) {});
  std::this_thread::sleep_for(std::chrono::milliseconds(500)); // the watch is open and quiet
  auto create = [&](int i) {
    std::string body = R"({"metadata":{"name":"c)" + std::to_string(i) + R"("}})";
    ASSERT_EQ(call(*c, {"POST", "/api/v1/namespaces/alice/configmaps", body})->status, 201);
  };
  const auto first = std::chrono::steady_clock::now();
  create(0);
  while (added() < 1 && std::chrono::steady_clock::now() - first < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_LT(std::chrono::steady_clock::now() - first, std::chrono::milliseconds(300))
      << "the first event after a quiet spell waits for no grid";
  for (int i = 1; i < 20; ++i)
    create(i);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (added() < 20 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(added(), 20u);
  std::lock_guard lock(mu);
  // The first alone, and the second too (it follows a quiet spell); the eighteen written within
  // a few milliseconds after it come in one read, or two when they straddle a point of the grid.
  EXPECT_LE(deliveries, 4u) << seen;
  stream->cancel();
}

// A watch that keeps busy across many points of the grid, bursts larger than one read among them,
// is read while its socket stays out of the reactor (plain TCP reads it directly then): every
// event arrives once, whole and in order, and the stream ends as the server ends it.
TEST_F(HttpClientTest, AStreamReadOnABusyGridLosesNothingAndEndsWithItsServer) {
  auto c = startWithAlice(false);
  ASSERT_TRUE(c);
  std::mutex mu;
  std::string seen;
  std::promise<Result<HttpResponse>> ended;
  HttpRequest watch{"GET", "/api/v1/namespaces/alice/configmaps?watch=true&timeoutSeconds=3"};
  watch.readGrid = std::chrono::milliseconds(20);
  auto stream = c->stream(
      std::move(watch), boost::asio::make_strand(runtime_.io()),
      [&](std::string_view bytes) {
        std::lock_guard lock(mu);
        seen.append(bytes);
      },
      [&](Result<HttpResponse> r) { ended.set_value(std::move(r)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200)); // the watch is open
  // 150 objects of 6 KiB from two writers: about 900 KiB within a second or so, events that
  // come within every step of the grid and pile up beyond one read's 64 KiB.
  constexpr int kObjects = 150;
  const std::string filler(std::size_t{6} * 1024, 'x');
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      auto own = client(access_);
      for (int i = w; i < kObjects; i += 2) {
        std::string body = R"({"metadata":{"name":"c)" + std::to_string(i) +
                           R"("},"data":{"filler":")" + filler + "\"}}";
        EXPECT_EQ(call(*own, {"POST", "/api/v1/namespaces/alice/configmaps", body})->status, 201);
      }
    });
  for (auto& w : writers)
    w.join();
  auto done = ended.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the server ends the watch after 3 s";
  auto r = done.get();
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->status, 200);
  std::lock_guard lock(mu);
  std::set<std::string> names;
  std::size_t events = 0;
  uint64_t lastVersion = 0;
  std::istringstream lines(seen);
  for (std::string line; std::getline(lines, line);) {
    auto event = nlohmann::json::parse(line); // whole: a torn read would not parse
    EXPECT_EQ(event["type"], "ADDED");
    EXPECT_EQ(event["object"]["data"]["filler"], filler);
    names.insert(event["object"]["metadata"]["name"].get<std::string>());
    const auto version =
        std::stoull(event["object"]["metadata"]["resourceVersion"].get<std::string>());
    EXPECT_GT(version, lastVersion) << "in the server's order";
    lastVersion = version;
    ++events;
  }
  EXPECT_EQ(events, static_cast<std::size_t>(kObjects)) << "each event once";
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kObjects));
}

// A stream cancelled while it waits for the grid's next point (its socket out of the reactor)
// ends with "cancelled" at that point, and its connection is closed, not leaked.
TEST_F(HttpClientTest, AStreamCancelledWhileItWaitsForTheGridEnds) {
  auto c = startWithAlice(false);
  ASSERT_TRUE(c);
  auto openFds = [] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator("/proc/self/fd"))
      ++n;
    return n;
  };
  const std::size_t fdsBefore = openFds();
  std::atomic<int> deliveries{0};
  std::promise<Result<HttpResponse>> ended;
  HttpRequest watch{"GET", "/api/v1/namespaces/alice/configmaps?watch=true"};
  watch.readGrid = std::chrono::milliseconds(1000);
  auto stream = c->stream(
      std::move(watch), boost::asio::make_strand(runtime_.io()),
      [&](std::string_view) { ++deliveries; },
      [&](Result<HttpResponse> r) { ended.set_value(std::move(r)); });
  // Two events a few milliseconds apart: the first is read at once (after a quiet spell), the
  // second comes while the next read waits for the grid.
  ASSERT_EQ(
      call(*c, {"POST", "/api/v1/namespaces/alice/configmaps", R"({"metadata":{"name":"a"}})"})
          ->status,
      201);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (deliveries == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(deliveries, 1);
  ASSERT_EQ(
      call(*c, {"POST", "/api/v1/namespaces/alice/configmaps", R"({"metadata":{"name":"b"}})"})
          ->status,
      201);
  stream->cancel();
  auto done = ended.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto r = done.get();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cancelled"), std::string::npos) << r.error();
  stream.reset();
  // The stream's connection closed, and the server's end of it then (the server runs in this
  // process; the client's pooled connection stays open, as before the watch).
  const auto closing = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (openFds() > fdsBefore && std::chrono::steady_clock::now() < closing)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(openFds(), fdsBefore);
}

// A stream cancelled while its socket is out of the reactor and no wait for the grid follows
// (the read before came more than two steps after the one before it: the socket is given back
// and the next read waits in the reactor) ends with "cancelled": the cancel's shutdown runs when
// the stream waits, with the socket in.
TEST_F(HttpClientTest, AStreamCancelledWhileItsSocketIsOutEnds) {
  auto c = startWithAlice(false);
  ASSERT_TRUE(c);
  std::atomic<bool> writing{true};
  std::mutex mu;
  std::shared_ptr<HttpTransport::Stream> stream;
  int deliveries = 0;
  std::promise<Result<HttpResponse>> ended;
  HttpRequest watch{"GET", "/api/v1/namespaces/alice/configmaps?watch=true"};
  watch.readGrid = std::chrono::milliseconds(50);
  auto opened = c->stream(
      std::move(watch), boost::asio::make_strand(runtime_.io()),
      [&](std::string_view) {
        // Every other delivery takes longer than two steps of the grid, so the read after it,
        // made at the next point with the socket out, counts as after a quiet spell; the
        // delivery after such a one cancels.
        std::lock_guard lock(mu);
        if (++deliveries == 6) {
          writing = false;
          stream->cancel();
        } else if (deliveries % 2 == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(130));
        }
      },
      [&](Result<HttpResponse> r) { ended.set_value(std::move(r)); });
  {
    std::lock_guard lock(mu);
    stream = opened;
  }
  std::thread writer([&] {
    auto own = client(access_);
    for (int i = 0; writing && i < 1000; ++i) {
      std::string body = R"({"metadata":{"name":"c)" + std::to_string(i) + R"("}})";
      EXPECT_EQ(call(*own, {"POST", "/api/v1/namespaces/alice/configmaps", body})->status, 201);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  auto done = ended.get_future();
  const bool ends = done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  writing = false;
  writer.join();
  ASSERT_TRUE(ends) << "the cancelled stream waits for an event that does not come";
  auto r = done.get();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cancelled"), std::string::npos) << r.error();
}

TEST_F(HttpClientTest, RequestPastItsDeadlineTimesOutAndTheNextOneWorks) {
  start(false);
  auto c = client(access_);
  server_->faults().setLatency(std::chrono::milliseconds(3000));
  HttpRequest slow{"GET", "/version"};
  slow.timeout = std::chrono::milliseconds(300);
  auto r = call(*c, slow);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("timed out"), std::string::npos) << r.error();
  server_->faults().setLatency(std::chrono::milliseconds(0));
  auto ok = call(*c, {"GET", "/version"});
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(c->connectionsOpened(), 2u); // the timed-out connection was not reused
}

TEST_F(HttpClientTest, TlsWithTokenVerifiesTheServer) {
  start(true);
  auto c = client(access_);
  auto r = call(*c, {"GET", "/api/v1/namespaces"});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->status, 200);
  ClusterAccess noToken = access_;
  noToken.token.clear();
  EXPECT_EQ(call(*client(noToken), {"GET", "/api/v1/namespaces"})->status, 401);
}

TEST_F(HttpClientTest, TlsRefusesAServerOutsideTheConfiguredCa) {
  start(true);
  auto other = httpd::generateCertificates("other", {"127.0.0.1"});
  ASSERT_TRUE(other.ok());
  ClusterAccess wrongCa = access_;
  wrongCa.caPem = other->caCertPem;
  auto r = call(*client(wrongCa), {"GET", "/version"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("GET " + access_.server + "/version: TLS handshake with 127.0.0.1:"),
            std::string::npos)
      << r.error();
  EXPECT_NE(r.error().find("certificate verify failed"), std::string::npos) << r.error();
  ClusterAccess wrongName = access_;
  wrongName.tlsServerName = "not-the-server.example";
  EXPECT_FALSE(call(*client(wrongName), {"GET", "/version"}).ok());
  ClusterAccess insecure = wrongCa;
  insecure.insecureSkipTlsVerify = true;
  EXPECT_EQ(call(*client(insecure), {"GET", "/version"})->status, 200);
}

TEST_F(HttpClientTest, UnusableTlsMaterialAndRefusedConnections) {
  start(false);
  ClusterAccess badCa = access_;
  badCa.scheme = "https";
  badCa.caPem = "not a certificate";
  auto c = BeastHttpClient::create(runtime_.io(), badCa);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("certificate authority is unusable"), std::string::npos) << c.error();
  ClusterAccess nowhere = access_;
  nowhere.port = "1"; // nothing listens on port 1
  auto r = call(*client(nowhere), {"GET", "/version"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cannot connect to 127.0.0.1:1"), std::string::npos) << r.error();
}

} // namespace
} // namespace kuscia_host::kube
