// otel-export: derived ids, the span model of a known timeline, config errors, the receiver's
// answers, and the plugin through the fake host against a real loopback receiver: a finished
// task is sent once and forgotten, history is not sent, and what a stuck task owes goes out.
#include "otel_export.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <kuscia_host/kube_text.hpp>
#include <mutex>
#include <thread>

#include "kuscia_fixtures.h"

namespace kuscia_host::plugins::otel {
namespace {

using nlohmann::json;
using test::deliver;
using test::fixture;

const kh_plugin_v1_t* descriptor() {
  return sdk::pluginDescriptor<OtelExport>("otel-export");
}

OtelExport& plugin(testing::FakeHost& host) {
  return *sdk::pluginObject<OtelExport>(host.instance());
}

int64_t at(const char* text) {
  return *sdk::parseTime(text);
}

const Attribute* attribute(const SpanData& s, const std::string& key) {
  for (const auto& a : s.attributes)
    if (a.key == key) return &a;
  return nullptr;
}

const SpanData* named(const Plan& p, const std::string& name, const std::string& entry = "") {
  for (const auto& s : p.spans) {
    const Attribute* e = attribute(s, "kuscia.entry");
    if (s.name == name &&
        (entry.empty() || (e != nullptr && std::get<std::string>(e->value) == entry)))
      return &s;
  }
  return nullptr;
}

std::string gunzip(std::string packed) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return {};
  z.next_in = reinterpret_cast<Bytef*>(packed.data());
  z.avail_in = static_cast<uInt>(packed.size());
  std::string out;
  int rc = Z_OK;
  while (rc == Z_OK) {
    char chunk[4096];
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string();
}

TaskFacts fixtureTask(const json& f) {
  TaskFacts t;
  t.name = f["task"]["name"];
  t.namespaceName = f["task"]["namespace"];
  t.initiator = f["task"]["initiator"];
  t.parties = f["task"]["parties"].get<std::vector<std::string>>();
  return t;
}

TEST(OtelIdsTest, DerivedAsDocumented) {
  // Computed with Python's hashlib from the documented derivation.
  TraceId trace = traceIdOf("otel-task");
  EXPECT_EQ(hex(trace), "8442bf2a432409e8af29e765f7d72b7e");
  EXPECT_EQ(hex(spanIdOf(trace, "", "", "", "task")), "72e4a4bd800d9cf2");
  EXPECT_EQ(hex(spanIdOf(trace, "alice", "alice/otel-task-0", "2024-05-20T08:00:01Z", "pulling")),
            "3f2afda60fee9247");
  EXPECT_NE(traceIdOf("otel-task-2"), trace);
}

TEST(OtelSpansTest, TheCompleteTaskOfTheInitiator) {
  json f = fixture("otel-timeline.json");
  Plan p = planSpans(f["documents"]["alice"], fixtureTask(f), "alice",
                     at(f["now"].get<std::string>().c_str()), int64_t{30} * 1000000000);
  EXPECT_TRUE(p.finished);
  ASSERT_EQ(p.spans.size(), 10u);
  const SpanData* root = named(p, "kuscia.task.startup");
  ASSERT_NE(root, nullptr);
  EXPECT_FALSE(root->parent);
  EXPECT_EQ(root->startNanos, at("2024-05-20T08:00:00Z"));
  EXPECT_EQ(root->endNanos, at("2024-05-20T08:00:11Z")); // every party's last entry ready
  EXPECT_EQ(std::get<std::string>(attribute(*root, "kuscia.task.root_end")->value), "all_ready");
  const SpanData* pulling = named(p, "pulling");
  ASSERT_NE(pulling, nullptr);
  EXPECT_EQ(pulling->startNanos, at("2024-05-20T08:00:03Z"));
  EXPECT_EQ(pulling->endNanos, at("2024-05-20T08:00:07Z"));
  EXPECT_NE(attribute(*pulling, "kuscia.blame"), nullptr);
  EXPECT_NE(attribute(*pulling, "kuscia.critical_path"), nullptr);
  ASSERT_EQ(pulling->events.size(), 1u);
  EXPECT_EQ(pulling->events[0].timeNanos, at("2024-05-20T08:00:03.5Z")); // when it was seen
  const SpanData* pod = named(p, "kuscia.pod.startup");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(*pulling->parent, pod->spanId);
  const SpanData* party = named(p, "kuscia.party.startup");
  ASSERT_NE(party, nullptr);
  EXPECT_EQ(*pod->parent, party->spanId);
  EXPECT_EQ(*party->parent, root->spanId);
  EXPECT_FALSE(party->parentRemote); // the initiator emits the root itself
  for (const auto& s : p.spans)
    EXPECT_EQ(s.traceId, traceIdOf("otel-task"));
  // bob's entries are bob's host's to send.
  for (const auto& s : p.spans) {
    if (const Attribute* e = attribute(s, "kuscia.entry")) {
      EXPECT_EQ(std::get<std::string>(e->value).rfind("alice/", 0), 0u);
    }
  }
}

// A task of a KusciaJob: the initiator's root has what came before it in the job (as the job view
// gives it, asked for only when the root goes out) as two spans under it, each once it ended,
// with ids derived like the others'; an approval still going on sends nothing.
TEST(OtelSpansTest, TheJobsApprovalAndTheTasksQueueAreSpansUnderTheRoot) {
  json f = fixture("otel-timeline.json");
  const json& doc = f["documents"]["alice"];
  json job = {{"job", "job-1"},
              {"approval",
               {{"phase", "approval"},
                {"from", "2024-05-19T08:00:00Z"},
                {"to", "2024-05-20T07:59:00Z"},
                {"party", "bob"},
                {"observed", true},
                {"precisionSeconds", 1}}},
              {"queued",
               {{"phase", "queued"},
                {"from", "2024-05-20T07:59:00Z"},
                {"to", "2024-05-20T08:00:00Z"},
                {"after", "approval"}}}};
  TaskFacts task = fixtureTask(f);
  const int64_t now = at(f["now"].get<std::string>().c_str());
  int asked = 0;
  const JobContext context = [&] {
    ++asked;
    return job;
  };
  Plan p = planSpans(doc, task, "alice", now, int64_t{30} * 1000000000, false, context);
  EXPECT_EQ(asked, 1);
  const SpanData* root = named(p, "kuscia.task.startup");
  const SpanData* approval = named(p, "kuscia.job.approval");
  const SpanData* queued = named(p, "kuscia.job.queued");
  ASSERT_NE(root, nullptr);
  ASSERT_NE(approval, nullptr);
  ASSERT_NE(queued, nullptr);
  EXPECT_EQ(*approval->parent, root->spanId);
  EXPECT_EQ(approval->spanId, spanIdOf(traceIdOf(task.name), "", "", "", "job.approval"));
  EXPECT_EQ(approval->startNanos, at("2024-05-19T08:00:00Z"));
  EXPECT_EQ(approval->endNanos, at("2024-05-20T07:59:00Z"));
  EXPECT_EQ(std::get<std::string>(attribute(*approval, "kuscia.party")->value), "bob");
  EXPECT_TRUE(std::get<bool>(attribute(*approval, "kuscia.phase.observed")->value));
  EXPECT_EQ(std::get<std::string>(attribute(*queued, "kuscia.job.after")->value), "approval");
  EXPECT_EQ(queued->endNanos, root->startNanos);
  // A partner's host owes no root: no job spans either, and the job is not read.
  EXPECT_EQ(named(planSpans(doc, task, "bob", now, int64_t{30} * 1000000000, false, context),
                  "kuscia.job.queued"),
            nullptr);
  EXPECT_EQ(asked, 1);
  // The approval's end not in the cached job yet (task-timeline's observation on its way): the
  // root waits for it, then (10 s after its end) goes without it, and without a queue whose start
  // is the approval's end.
  job["approval"].erase("to");
  job["approval"]["reason"] = "not observed: the host was not watching when the job left approval";
  job["queued"].erase("from");
  const int64_t rootEnd = root->endNanos;
  Plan waiting = planSpans(doc, task, "alice", rootEnd + int64_t{9} * 1000000000,
                           int64_t{30} * 1000000000, false, context);
  EXPECT_EQ(named(waiting, "kuscia.task.startup"), nullptr);
  EXPECT_FALSE(waiting.finished);
  Plan late = planSpans(doc, task, "alice", rootEnd + int64_t{10} * 1000000000,
                        int64_t{30} * 1000000000, false, context);
  EXPECT_NE(named(late, "kuscia.task.startup"), nullptr);
  EXPECT_EQ(named(late, "kuscia.job.approval"), nullptr);
  EXPECT_EQ(named(late, "kuscia.job.queued"), nullptr);
  EXPECT_TRUE(late.finished);
}

TEST(OtelSpansTest, AStuckEntrySendsWhatEndedAndItsPendingPhase) {
  json f = fixture("otel-timeline.json");
  const json& doc = f["documents"]["bob"];
  TaskFacts task = fixtureTask(f);
  // Not stuck yet: nothing pending, and the task is not finished for bob.
  Plan early = planSpans(doc, task, "bob", at("2024-05-20T08:00:20Z"), int64_t{30} * 1000000000);
  EXPECT_FALSE(early.finished);
  for (const auto& s : early.spans)
    EXPECT_FALSE(s.pending);
  Plan late = planSpans(doc, task, "bob", at("2024-05-20T08:00:40Z"), int64_t{30} * 1000000000);
  EXPECT_FALSE(late.finished);
  const SpanData* readiness = named(late, "readiness");
  ASSERT_NE(readiness, nullptr);
  EXPECT_TRUE(readiness->pending);
  EXPECT_EQ(readiness->status, StatusCode::kError);
  EXPECT_EQ(readiness->statusMessage,
            "ContainersNotReady: containers with unready status: [secretflow]");
  EXPECT_EQ(readiness->endNanos, at("2024-05-20T08:00:40Z"));
  EXPECT_EQ(named(late, "kuscia.pod.startup"), nullptr);   // not ended
  EXPECT_EQ(named(late, "kuscia.party.startup"), nullptr); // nor its party
  EXPECT_EQ(named(late, "kuscia.task.startup"), nullptr);  // bob is not the initiator
  // Once ready, the same phase ends with the same id; the party hangs under the initiator's root
  // in another host (a remote parent).
  json ready = doc;
  ready["entries"]["bob/otel-task-0"]["times"]["readyTime"] = "2024-05-20T08:00:45Z";
  Plan done =
      planSpans(ready, task, "bob", at("2024-05-20T08:00:50Z"), int64_t{30} * 1000000000, true);
  EXPECT_TRUE(done.finished);
  const SpanData* ended = named(done, "readiness");
  ASSERT_NE(ended, nullptr);
  EXPECT_EQ(ended->spanId, readiness->spanId);
  EXPECT_FALSE(ended->pending);
  EXPECT_EQ(ended->endNanos, at("2024-05-20T08:00:45Z"));
  const SpanData* party = named(done, "kuscia.party.startup");
  ASSERT_NE(party, nullptr);
  EXPECT_TRUE(party->parentRemote); // p2p
  Plan centralized =
      planSpans(ready, task, "bob", at("2024-05-20T08:00:50Z"), int64_t{30} * 1000000000);
  EXPECT_FALSE(named(centralized, "kuscia.party.startup")->parentRemote); // the same host's root
  EXPECT_EQ(*party->parent, spanIdOf(traceIdOf("otel-task"), "", "", "", "task"));
}

TEST(OtelSpansTest, InP2pTheInitiatorEndsTheRootWhenEveryPartyRuns) {
  json f = fixture("otel-timeline.json");
  json doc = f["documents"]["alice"];
  for (auto it = doc["entries"].begin(); it != doc["entries"].end();)
    it = it.key().rfind("bob/", 0) == 0 ? doc["entries"].erase(it) : std::next(it);
  TaskFacts task = fixtureTask(f);
  int64_t now = at("2024-05-20T08:00:30Z");
  Plan waiting = planSpans(doc, task, "alice", now, int64_t{300} * 1000000000);
  EXPECT_FALSE(waiting.finished); // alice is ready, but nothing says bob is
  EXPECT_EQ(named(waiting, "kuscia.task.startup"), nullptr);
  task = taskFactsOf("otel-task", "cross-domain",
                     json::parse(R"([null, "alice", [{"domainID": "alice"}, {"domainID": "bob"}],
                       "Running", [{"domainID": "alice", "phase": "Running"},
                                   {"domainID": "bob", "phase": "Running"}],
                       [{"type": "Running", "status": "True",
                         "lastTransitionTime": "2024-05-20T08:00:14Z"}], null, null, null, null])"));
  EXPECT_TRUE(task.partiesRunning);
  Plan running = planSpans(doc, task, "alice", now, int64_t{300} * 1000000000);
  EXPECT_TRUE(running.finished);
  const SpanData* root = named(running, "kuscia.task.startup");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->endNanos, at("2024-05-20T08:00:14Z"));
  EXPECT_EQ(std::get<std::string>(attribute(*root, "kuscia.task.root_end")->value),
            "parties_running");
}

// A task Kuscia failed at its route pre-check, before any pod: no party has entries, and the
// initiator's root still goes out, in ERROR with the reason (a party owes no span of entries it
// never had).
TEST(OtelSpansTest, ATaskFailedBeforeAnyPodSendsItsRoot) {
  json f = fixture("otel-timeline.json");
  json doc = {{"task", "otel-task"},
              {"createTime", "2024-05-20T08:00:00Z"},
              {"phase", "Failed"},
              {"completionTime", "2024-05-20T08:00:01Z"},
              {"evidence",
               {{"message", "KusciaTask failed after 3x retry, last error: cdr-check alice to bob "
                            "failed with HeartBeatTimeout"}}},
              {"entries", json::object()}};
  Plan p = planSpans(doc, fixtureTask(f), "alice", at("2024-05-20T08:00:30Z"),
                     int64_t{300} * 1000000000);
  EXPECT_TRUE(p.finished);
  const SpanData* root = named(p, "kuscia.task.startup");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->status, StatusCode::kError);
  EXPECT_EQ(root->statusMessage, "RouteNotReady");
  EXPECT_EQ(root->endNanos, at("2024-05-20T08:00:01Z"));
}

TEST(OtelSpansTest, DocumentsOfAnyShapeNeverThrow) {
  // Found by fuzz_otlp: an entry that is not an object (documents come from statuses).
  json doc = json::parse(R"({"task": "t", "createTime": "2024-05-20T08:00:00Z",
      "entries": {"alice/a": "a string", "alice/b": {"kind": "pod", "times": "no",
                  "reasons": [1]}, "alice/c": {"kind": "pod",
                  "times": {"createTime": "2024-05-20T08:00:01Z"}, "reasons": "no"}}})");
  TaskFacts task;
  task.name = "t";
  task.initiator = "alice";
  task.parties = {"alice"};
  EXPECT_NO_THROW(planSpans(doc, task, "alice", at("2024-05-20T09:00:00Z"), 1000000000));
}

TEST(OtelConfigTest, ErrorsNameTheKey) {
  auto key = [](const std::string& config) {
    auto bad = testing::FakeHost::validateConfig(descriptor(), config);
    return bad ? bad->first + ": " + bad->second : std::string("ok");
  };
  EXPECT_NE(key("{}").find("endpoint: config key 'endpoint' is required"), std::string::npos);
  EXPECT_NE(key(R"({"endpoint": "ftp://x"})").find("endpoint:"), std::string::npos);
  EXPECT_NE(key(R"({"endpoint": "http://u:p@x:4318"})").find("credentials"), std::string::npos);
  EXPECT_NE(key(R"({"endpoint": "http://x:99999"})").find("no valid port"), std::string::npos);
  EXPECT_NE(key(R"({"endpoint": "http://x", "encoding": "xml"})").find("encoding:"),
            std::string::npos);
  EXPECT_NE(key(R"({"endpoint": "http://x", "headers": {"A B": "c"}})").find("headers:"),
            std::string::npos);
  EXPECT_NE(key(R"({"endpoint": "http://x", "headerFiles": {"Authorization": "/nonexistent"}})")
                .find("headerFiles: config key 'headerFiles': Authorization: cannot read"),
            std::string::npos);
  EXPECT_NE(key(R"({"endpoint": "http://x", "caFile": "/etc/hostname"})").find("not https"),
            std::string::npos);
  EXPECT_EQ(key(R"({"endpoint": "https://tempo.example:4318", "encoding": "json"})"), "ok");
  std::string error;
  EXPECT_EQ(parseEndpoint("http://collector:4318", error).target, "/v1/traces");
  EXPECT_EQ(parseEndpoint("http://collector:4318/", error).target, "/v1/traces");
  EXPECT_EQ(parseEndpoint("https://tempo/otlp/v1/traces", error).target, "/otlp/v1/traces");
  EXPECT_EQ(parseEndpoint("https://tempo/otlp/v1/traces", error).port, 443);
  EXPECT_EQ(parseEndpoint("http://[::1]:4318", error).host, "::1");
}

TEST(OtlpEncodeTest, AnswersRetryAfterAndGzip) {
  // ExportTraceServiceResponse{partial_success{rejected_spans: 3, error_message: "full"}}
  std::string proto = std::string("\x0a\x08\x08\x03\x12\x04", 6) + "full";
  ExportAnswer a = parseAnswer(proto, false);
  EXPECT_EQ(a.rejectedSpans, 3);
  EXPECT_EQ(a.errorMessage, "full");
  a = parseAnswer(R"({"partialSuccess": {"rejectedSpans": "2", "errorMessage": "quota"}})", true);
  EXPECT_EQ(a.rejectedSpans, 2);
  EXPECT_EQ(parseAnswer("", false).rejectedSpans, 0);
  EXPECT_EQ(parseAnswer("{}", true).rejectedSpans, 0);
  EXPECT_EQ(parseAnswer("\xff\xff", false).rejectedSpans, 0);   // not a response: full success
  auto now = std::chrono::system_clock::from_time_t(784111777); // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(retryAfterDelay("3", now), std::chrono::milliseconds(3000));
  EXPECT_EQ(retryAfterDelay("Sun, 06 Nov 1994 08:49:47 GMT", now),
            std::chrono::milliseconds(10000));
  EXPECT_EQ(retryAfterDelay("Sat, 05 Nov 1994 08:49:47 GMT", now), std::chrono::milliseconds(0));
  // A far date (beyond what the clock's nanoseconds hold) waits a day, as a huge delta does.
  EXPECT_EQ(retryAfterDelay("Fri, 31 Dec 9999 23:59:59 GMT", now), std::chrono::hours(24));
  EXPECT_EQ(retryAfterDelay("99999999999", now), std::chrono::hours(24));
  EXPECT_FALSE(retryAfterDelay("soon", now));
  EXPECT_FALSE(retryAfterDelay("", now));
  std::string text(5000, 'k');
  std::string packed = gzip(text);
  ASSERT_GT(packed.size(), 10u);
  EXPECT_EQ(static_cast<uint8_t>(packed[0]), 0x1f); // the gzip magic
  EXPECT_EQ(static_cast<uint8_t>(packed[1]), 0x8b);
  std::string out = gunzip(packed);
  EXPECT_EQ(out, text);
}

// A loopback OTLP/HTTP receiver that answers 200 and keeps every JSON body.
class Receiver {
public:
  Receiver() : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~Receiver() {
    stopping_ = true;
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  std::vector<json> spans() {
    std::lock_guard lock(mu_);
    std::vector<json> out;
    for (const auto& b : bodies_)
      for (const auto& s : b["resourceSpans"][0]["scopeSpans"][0]["spans"])
        out.push_back(s);
    return out;
  }

private:
  void serve() {
    namespace http = boost::beast::http;
    while (!stopping_) {
      boost::asio::ip::tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stopping_) continue;
      boost::beast::flat_buffer buffer;
      http::request<http::string_body> req;
      http::read(socket, buffer, req, ec);
      if (ec) continue;
      {
        std::lock_guard lock(mu_);
        bool packed = req[http::field::content_encoding] == "gzip";
        bodies_.push_back(json::parse(packed ? gunzip(req.body()) : req.body()));
      }
      http::response<http::string_body> res{http::status::ok, 11};
      res.prepare_payload();
      http::write(socket, res, ec);
    }
  }
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<json> bodies_;
  std::thread thread_;
};

// Waits (the fake host's timers poll the exporter) until `n` spans arrived.
bool receive(testing::FakeHost& host, Receiver& r, std::size_t n, int waitMillis = 5000) {
  for (int i = 0; i < waitMillis / 10 && r.spans().size() < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  host.advanceMillis(1000);
  return r.spans().size() == n;
}

TEST(OtelExportTest, AFinishedTaskIsSentOnceAndForgotten) {
  Receiver receiver;
  testing::FakeHost host("alice");
  host.setWallTimeNanos(at("2024-05-20T08:01:00Z"));
  ASSERT_TRUE(host.create(descriptor(), R"({"encoding": "json", "batchDelayMillis": 0,
      "compression": "none", "endpoint": ")" +
                                            receiver.url() + "\"}"))
      << host.error();
  ASSERT_TRUE(host.start());
  json task = test::readyTask();
  json pod = fixture("pod.json");
  // As a restarted host gets them: the task's list first, then its pod's and the pod's Events.
  // Nothing is decided before every list is in: the image pull would be missing.
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  deliver(host, "pods", KH_EVENT_ADDED, pod);
  for (const auto& [reason, time] : {std::pair("Pulling", "2024-05-20T08:00:03Z"),
                                     std::pair("Pulled", "2024-05-20T08:00:05Z")}) {
    json event = {
        {"metadata", {{"name", std::string("pull-") + reason}, {"namespace", "alice"}}},
        {"involvedObject",
         {{"kind", "Pod"}, {"name", "secretflow-task-psi-0"}, {"uid", pod["metadata"]["uid"]}}},
        {"reason", reason},
        {"lastTimestamp", time}};
    deliver(host, "events", KH_EVENT_ADDED, event);
  }
  host.advanceMillis(1000);
  EXPECT_TRUE(receiver.spans().empty());
  test::synced(host);
  // alice: root, party, pod + 5 phases, 3 services + 3 programming.
  ASSERT_TRUE(receive(host, receiver, 14)) << receiver.spans().size();
  bool pulling = false;
  for (const auto& s : receiver.spans())
    pulling = pulling || s["name"] == "pulling";
  EXPECT_TRUE(pulling);
  // The receiver has them before the exporter has read its answer.
  for (int i = 0; i < 500 && plugin(host).counters().exported < 14; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  host.advanceMillis(1000); // the metrics follow on the next tick
  EXPECT_EQ(host.metric("kuscia_otel_spans_exported_total"), 14);
  EXPECT_EQ(plugin(host).heldTasks(), 0u) << "nothing of a sent task stays but its name";
  EXPECT_EQ(plugin(host).heldPods(), 0u);
  EXPECT_EQ(plugin(host).recentTasks(), 1u);
  // Sent: the host may forget the task (ABI 1.3).
  EXPECT_TRUE(host.released(test::subscription(host, "kusciatasks").id,
                            "cross-domain/secretflow-task-psi"));
  // The same task again (a resync, a status change): nothing more is sent.
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, task);
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  EXPECT_FALSE(receive(host, receiver, 15, 300));
  EXPECT_EQ(receiver.spans().size(), 14u);
  std::set<std::string> ids;
  for (const auto& s : receiver.spans())
    ids.insert(s["spanId"].get<std::string>());
  EXPECT_EQ(ids.size(), 14u);
  deliver(host, "pods", KH_EVENT_DELETED, pod);
  EXPECT_EQ(plugin(host).heldPods(), 0u);
  host.advanceMillis(700000); // past resendWindowSeconds: not even the name stays
  EXPECT_EQ(plugin(host).recentTasks(), 0u);
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, task); // and it is history now
  EXPECT_EQ(plugin(host).heldTasks(), 0u);
  EXPECT_FALSE(receive(host, receiver, 15, 300));
  // The pod's uid from the pod, the first Ready from its condition.
  for (const auto& s : receiver.spans())
    if (s["name"] == "kuscia.pod.startup") {
      bool uid = false;
      for (const auto& a : s["attributes"])
        uid = uid ||
              (a["key"] == "k8s.pod.uid" && a["value"]["stringValue"] == pod["metadata"]["uid"]);
      EXPECT_TRUE(uid) << s.dump();
    }
}

TEST(OtelExportTest, HistoryIsNotSentAndNotKept) {
  Receiver receiver;
  testing::FakeHost host("alice");
  host.setWallTimeNanos(at("2024-05-21T08:00:00Z")); // a day after the task started
  ASSERT_TRUE(host.create(descriptor(), R"({"encoding": "json", "batchDelayMillis": 0,
      "endpoint": ")" + receiver.url() + "\"}"))
      << host.error();
  ASSERT_TRUE(host.start());
  test::synced(host);
  for (int i = 0; i < 50; ++i) {
    json task = test::readyTask();
    task["metadata"]["name"] = "old-task-" + std::to_string(i);
    task["metadata"]["uid"] = "uid-" + std::to_string(i);
    deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  }
  host.advanceMillis(6000);
  EXPECT_TRUE(receiver.spans().empty());
  EXPECT_EQ(plugin(host).heldTasks(), 0u);
  EXPECT_EQ(plugin(host).recentTasks(), 0u);
  EXPECT_EQ(host.releases().size(), 50u) << "none of them is kept in the host's cache";
}

TEST(OtelExportTest, AStuckTaskSendsItsPendingPhaseThenItsEnd) {
  Receiver receiver;
  testing::FakeHost host("alice");
  host.setWallTimeNanos(at("2024-05-20T08:00:05Z"));
  ASSERT_TRUE(host.create(descriptor(), R"({"encoding": "json", "batchDelayMillis": 0,
      "stuckAfterSeconds": 10, "endpoint": ")" +
                                            receiver.url() + "\"}"))
      << host.error();
  ASSERT_TRUE(host.start());
  test::synced(host);
  json task = test::readyTask();
  task["status"]["podStatuses"]["alice/secretflow-task-psi-0"].erase("readyTime");
  json pod = fixture("pod.json");
  pod["status"]["conditions"] = json::array();
  // Its container waits: the reason is kept from when it was first seen (08:00:05), however
  // often the pod is seen again.
  pod["status"]["containerStatuses"][0]["state"] = {
      {"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off 10s"}}}};
  deliver(host, "pods", KH_EVENT_ADDED, pod);
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  EXPECT_EQ(plugin(host).heldTasks(), 1u);
  EXPECT_TRUE(receiver.spans().empty()); // in flight, not stuck yet
  host.advanceMillis(5000);
  pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"] = "back-off 20s";
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  host.advanceMillis(15000); // the sweep finds it stuck
  for (int i = 0; i < 300 && receiver.spans().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::string pendingId;
  for (const auto& s : receiver.spans())
    if (s.value("status", json::object()).value("code", 0) == 2 && s["name"] == "starting")
      pendingId = s["spanId"];
  ASSERT_FALSE(pendingId.empty()) << json(receiver.spans()).dump();
  // The task's root goes out pending too, in ERROR with why it is stuck (summary.stuck).
  bool rootStuck = false;
  for (const auto& s : receiver.spans())
    if (s["name"] == "kuscia.task.startup") {
      rootStuck = true;
      EXPECT_EQ(s["status"]["code"], 2);
      EXPECT_EQ(s["status"]["message"], "Crashed");
      ASSERT_EQ(s["events"].size(), 1u);
      EXPECT_EQ(s["events"][0]["name"], "kuscia.failure");
    }
  EXPECT_TRUE(rootStuck) << json(receiver.spans()).dump();
  for (const auto& s : receiver.spans())
    if (s["spanId"] == pendingId) {
      EXPECT_EQ(s["name"], "starting");
      EXPECT_EQ(s["status"]["message"], "CrashLoopBackOff: back-off 10s");
      ASSERT_EQ(s["events"].size(), 1u);
      EXPECT_EQ(s["events"][0]["name"], "CrashLoopBackOff");
      EXPECT_EQ(s["events"][0]["timeUnixNano"], std::to_string(at("2024-05-20T08:00:05Z")));
    }
  std::size_t before = receiver.spans().size();
  host.advanceMillis(10000); // still stuck: not sent again
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(receiver.spans().size(), before);
  deliver(host, "pods", KH_EVENT_MODIFIED, fixture("pod.json")); // running, then ready
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, test::readyTask());
  for (int i = 0; i < 300 && receiver.spans().size() == before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int sent = 0;
  for (const auto& s : receiver.spans())
    if (s["spanId"] == pendingId) {
      ++sent;
      if (sent == 2) {
        EXPECT_EQ(s.value("status", json::object()).value("code", 0), 0) << s.dump();
      }
    }
  EXPECT_EQ(sent, 2) << "the pending phase once stuck, once ended";
  EXPECT_EQ(plugin(host).heldTasks(), 0u);
}

} // namespace
} // namespace kuscia_host::plugins::otel
