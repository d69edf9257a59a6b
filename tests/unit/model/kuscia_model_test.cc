// The Kuscia model (model/) on its own: the model of Kuscia's objects every bundled plugin
// builds on, the status write, the backoff, and the write contest's notion of one time.
#include <kuscia_model/kuscia_model.h>

#include <kuscia_model/kuscia.h>

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kuscia_fixtures.h"
#include <kuscia_model/control_plane.h>
#include <kuscia_model/domain_pods.h>
#include <kuscia_model/json_text.h>
#include <kuscia_model/kept_facts.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/own_entries.h>
#include <kuscia_model/pod_fields.h>
#include <kuscia_model/status_entries.h>
#include <kuscia_model/status_patch.h>
#include <kuscia_model/status_writer.h>
#include <kuscia_model/timeline_text.h>
#include <kuscia_model/write_contest.h>

namespace kuscia_host::model {
namespace {

using nlohmann::json;

TEST(KusciaModelTest, StatusEntryTimesAndIncarnations) {
  json entry =
      json::parse(R"({"namespace":"alice","podName":"p","createTime":"2024-05-20T08:00:00Z",
                               "startTime":"2024-05-20T16:00:02+08:00","readyTime":null,
                               "scheduleTime":"yesterday"})");
  EXPECT_EQ(entryTime(&entry, "startTime"), parseTime("2024-05-20T08:00:02Z"));
  EXPECT_FALSE(entryTime(&entry, "readyTime"));    // null
  EXPECT_FALSE(entryTime(&entry, "scheduleTime")); // malformed
  EXPECT_FALSE(entryTime(nullptr, "startTime"));
  EXPECT_TRUE(entryHas(&entry, "startTime"));
  EXPECT_FALSE(entryHas(&entry, "readyTime"));
  auto created = parseTime("2024-05-20T08:00:00Z");
  EXPECT_TRUE(sameIncarnation(&entry, created));
  EXPECT_FALSE(sameIncarnation(&entry, parseTime("2024-05-20T08:05:00Z"))); // recreated
  EXPECT_TRUE(sameIncarnation(&entry, std::nullopt));
  EXPECT_FALSE(sameIncarnation(nullptr, created)); // no entry: nothing to be the same as
}

// An entry's times read once (EntryClock) are what the entry holds, and every comparison answers
// from them as the rule says (setEntryTime, sameIncarnation in kuscia_model.h): every field
// present, null, malformed or absent, every wanted time, clearing and forward-only.
TEST(KusciaModelTest, EntryClockComparesAsTheEntry) {
  const std::vector<std::optional<int64_t>> wants = {
      std::nullopt, parseTime("2024-05-20T08:00:00Z"), parseTime("2024-05-20T08:00:00.400Z"),
      parseTime("2024-05-20T08:00:01Z"), parseTime("2024-05-20T07:59:59Z")};
  for (const char* text : {
           R"({"createTime":"2024-05-20T08:00:00Z","startTime":"2024-05-20T16:00:00+08:00",
               "readyTime":null,"scheduleTime":"yesterday"})",
           R"({"createTime":"2024-05-20T08:00:01Z","readyTime":"2024-05-20T08:00:00.400Z",
               "scheduleTime":7})",
           R"({})",
           R"("not an entry")",
           "null",
       }) {
    SCOPED_TRACE(text);
    const json entry = json::parse(text);
    const EntryClock clock(&entry);
    EXPECT_EQ(clock.present(), entry.is_object());
    for (const auto& want : wants) {
      const auto created = entryTime(&entry, "createTime");
      EXPECT_EQ(sameIncarnation(clock, want),
                entry.is_object() && (!created || !want || *created == *want));
      EXPECT_EQ(sameIncarnation(&entry, want), sameIncarnation(clock, want));
      for (TimeField f :
           {TimeField::kCreate, TimeField::kSchedule, TimeField::kStart, TimeField::kReady}) {
        const auto have = entryTime(&entry, fieldName(f));
        const bool has = entryHas(&entry, fieldName(f));
        EXPECT_EQ(clock.time(f), have);
        EXPECT_EQ(clock.has(f), has);
        for (bool clearStale : {false, true})
          for (bool forwardOnly : {false, true}) {
            // The rule: a wanted time is set unless the entry holds the same instant (or, forward
            // only, a later one); no wanted time clears what the entry holds when asked to.
            const bool sets =
                want && !(have && (sameTime(*have, *want) || (forwardOnly && *have > *want)));
            const bool clears = !want && clearStale && has;
            StatusPatch::Entry fromClock{StatusPatch::kPods, "alice/p"};
            StatusPatch::Entry fromEntry{StatusPatch::kPods, "alice/p"};
            EXPECT_EQ(setEntryTime(&fromClock, clock, f, want, clearStale, forwardOnly),
                      sets || clears);
            EXPECT_EQ(setEntryTime(&fromEntry, &entry, f, want, clearStale, forwardOnly),
                      sets || clears);
            EXPECT_EQ(fromClock.time(f), sets ? want : std::nullopt);
            EXPECT_EQ(fromClock.fields.size(), sets || clears ? 1U : 0U);
            EXPECT_EQ(fromEntry.fields.size(), fromClock.fields.size());
          }
      }
    }
  }
  EXPECT_FALSE(EntryClock(nullptr).present());
  EXPECT_FALSE(sameIncarnation(EntryClock(nullptr), parseTime("2024-05-20T08:00:00Z")));
}

TEST(KusciaModelTest, ConditionsAndEndpointAddresses) {
  json conditions = json::parse(R"([{"type":"PodScheduled","status":"True"},
                                    {"type":"Ready","status":"False"}])");
  EXPECT_NE(trueCondition(conditions, "PodScheduled"), nullptr);
  EXPECT_EQ(trueCondition(conditions, "Ready"), nullptr);
  EXPECT_EQ(trueCondition(json("not a list"), "Ready"), nullptr);
  EXPECT_TRUE(endpointsHaveAddress(json::parse(R"([{"notReadyAddresses":[{"ip":"1.2.3.4"}]},
                                                   {"addresses":[{"ip":"10.0.0.1"}]}])")));
  EXPECT_FALSE(endpointsHaveAddress(json::parse(R"([{"addresses":[]},{"ports":[]}, 7])")));
  EXPECT_FALSE(endpointsHaveAddress(json()));
}

// The gateway's check read off the text answers as the DOM's, or says it cannot read the text.
TEST(KusciaModelTest, SubsetsReadOffTheTextAnswerAsTheDom) {
  for (const char* text : {
           R"([{"notReadyAddresses":[{"ip":"1.2.3.4"}]}, {"addresses":[{"ip":"10.0.0.1"}]}])",
           R"([{"addresses":[]},{"ports":[]}, 7])",
           R"([{"addresses":[]},{"addresses":[{"ip":"10.0.0.1"}]}])",
           R"([{"addresses" : [ {"ip":"a]\"}"} ] }])",
           R"([{"addresses":[{"ip":"10.0.0.1"}]}])",
           R"([{"addresses":null},{"addresses":{"ip":"x"}},{"addresses":"[1]"}, null, []])",
           R"([{"addresses":[{"ip":"1"}],"addresses":[]}])",
           R"([{"ports":[{"port":80}],"addresses":[{"ip":"1"}]}])",
           "[]",
           "null",
       }) {
    SCOPED_TRACE(text);
    auto fromText = subsetsHaveAddress(text);
    ASSERT_TRUE(fromText.has_value());
    EXPECT_EQ(*fromText, endpointsHaveAddress(json::parse(text)));
  }
  EXPECT_FALSE(subsetsHaveAddress("[{\"addresses\":[1,]").has_value()); // cut short
  EXPECT_FALSE(subsetsHaveAddress("{}").has_value());
}

// A pod's fields read off simdjson's DOM (pod_fields.h) hold what task-timeline read before from
// parseFields' nlohmann DOM: every case of the conditions, containers and time fields it reads.
TEST(KusciaModelTest, PodFieldsReadAsTheNlohmannDom) {
  // The reading task-timeline made of the nlohmann DOM.
  struct Reading { // NOLINT(bugprone-exception-escape): nlohmann members, a test's own
    std::string task, phase, reason, message;
    json create, start, readyTime, scheduledTime;
    bool ready = false, scheduled = false;
    std::optional<int64_t> containersStart;
    std::string waitingReason, waitingMessage, schedFalseReason, readyFalseReason;
    std::vector<std::pair<std::string, std::string>> waitingReasons; // every one with a reason
  };
  auto fromDom = [](const std::string& text) {
    json f = parseFields(text, 8);
    Reading r;
    r.task = fieldString(f, 0);
    r.phase = fieldString(f, 3);
    r.reason = fieldString(f, 6);
    r.message = fieldString(f, 7);
    r.create = f[1];
    r.start = f[2];
    if (const json* c = trueCondition(f[4], "Ready")) {
      r.ready = true;
      r.readyTime = c->value("lastTransitionTime", json());
    }
    if (const json* c = trueCondition(f[4], "PodScheduled")) {
      r.scheduled = true;
      r.scheduledTime = c->value("lastTransitionTime", json());
    }
    r.containersStart = model::timeline::containersStartTime(f[5]);
    if (f[5].is_array())
      for (const auto& c : f[5]) {
        const json* waiting = c.is_object() && c.contains("state") && c["state"].is_object() &&
                                      c["state"].contains("waiting")
                                  ? &c["state"]["waiting"]
                                  : nullptr;
        if (waiting != nullptr && waiting->is_object()) {
          std::string reason = waiting->value("reason", ""),
                      message = waiting->value("message", "");
          if (r.waitingReasons.empty()) {
            r.waitingReason = reason;
            r.waitingMessage = message;
          }
          if (!reason.empty()) r.waitingReasons.emplace_back(reason, message);
        }
      }
    if (const json* c = findCondition(f[4], "PodScheduled"); c && c->value("status", "") == "False")
      r.schedFalseReason = c->value("reason", "Unschedulable");
    if (const json* c = findCondition(f[4], "Ready"); c && c->value("status", "") == "False")
      r.readyFalseReason = c->value("reason", "NotReady");
    return r;
  };
  // A time field as the DOM held it: absent, a string, or another value.
  auto sameTime = [](const TimeText& t, const json& j) {
    if (j.is_null()) return t.kind == TimeText::kAbsent;
    if (j.is_string()) return t.kind == TimeText::kString && t.text == j.get<std::string>();
    return t.kind == TimeText::kOther && json::parse(t.text) == j;
  };
  const std::string running = R"({"state":{"running":{"startedAt":"2026-01-02T03:04:05Z"}}})";
  for (
      const std::string& text : std::vector<std::string>{
          // L1's pods: scheduled, then ready.
          std::string(R"(["t1","2026-01-02T03:04:00Z","2026-01-02T03:04:01Z","Running",)") +
              R"([{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-01-02T03:04:01Z"},)" +
              R"({"type":"Ready","status":"True","lastTransitionTime":"2026-01-02T03:04:09Z"}],null,null,null])",
          // Waiting: unschedulable without a reason, not ready with one.
          std::string(R"(["t1","2026-01-02T03:04:00Z",null,"Pending",)") +
              R"([{"type":"PodScheduled","status":"False","message":"0/3 nodes"},)" +
              R"({"type":"Ready","status":"False","reason":"ContainersNotReady"}],null,"Why","So"])",
          // Containers: all running (the latest start), then one waiting with and without reason.
          R"(["t1",null,null,"Running",[],[)" + running +
              R"(,{"state":{"running":{"startedAt":"2026-01-02T03:04:07+02:00"}}}],null,null])",
          R"(["t1",null,null,"Pending",[],[)" + running +
              R"(,{"state":{"waiting":{"message":"first"}}},{"state":{"waiting":{"reason":"ImagePullBackOff","message":"pull"}}}],null,null])",
          R"(["t1",null,null,"Pending",[],[{"state":{"waiting":{"message":"only"}}},{"state":{}}],null,null])",
          // Repeated keys (the last holds), repeated conditions (the first holds), wrong types.
          R"(["t1",null,null,"Running",[{"type":"Ready","status":"False","status":"True","lastTransitionTime":"2026-01-02T03:04:09Z"},{"type":"Ready","status":"False"}],null,null,null])",
          R"(["t2",12,{"a":[1,2]},7,[{"type":"Ready","status":"True","lastTransitionTime":5},"x",{"kind":3}],{"state":1},4,[]])",
          R"(["t1",null,null,null,[{"type":"PodScheduled","status":"True"}],[{"state":{"running":{"startedAt":"not a time"}}}],null,null])",
          // An integer beyond 64 bits (nlohmann reads a double, simdjson refuses the text).
          R"(["t1","2026-01-02T03:04:00Z",null,"Running",[],[{"restartCount":100000000000000000000000,"state":{"running":{"startedAt":"2026-01-02T03:04:05Z"}}}],null,null])",
          // Not the fields: no task, nothing read.
          R"(["t1",null])",
          "not json",
          "null",
          R"({"a":1})",
      }) {
    SCOPED_TRACE(text);
    const Reading want = fromDom(text);
    const PodFields got = readPodFields(text);
    EXPECT_EQ(got.task, want.task);
    EXPECT_EQ(got.phase, want.phase);
    EXPECT_EQ(got.reason, want.reason);
    EXPECT_EQ(got.message, want.message);
    EXPECT_TRUE(sameTime(got.create, want.create));
    EXPECT_TRUE(sameTime(got.start, want.start));
    EXPECT_EQ(got.ready.isTrue, want.ready);
    if (want.ready) {
      EXPECT_TRUE(sameTime(got.ready.lastTransitionTime, want.readyTime));
    }
    EXPECT_EQ(got.scheduled.isTrue, want.scheduled);
    if (want.scheduled) {
      EXPECT_TRUE(sameTime(got.scheduled.lastTransitionTime, want.scheduledTime));
    }
    EXPECT_EQ(got.containersStart, want.containersStart);
    EXPECT_EQ(got.waitingReason, want.waitingReason);
    EXPECT_EQ(got.waitingMessage, want.waitingMessage);
    EXPECT_EQ(got.scheduled.isFalse ? got.scheduled.reason.value_or("Unschedulable") : "",
              want.schedFalseReason);
    EXPECT_EQ(got.ready.isFalse ? got.ready.reason.value_or("NotReady") : "",
              want.readyFalseReason);
    EXPECT_EQ(got.waitingReasons, want.waitingReasons);
    // The same pod through DomainPods' shorter projection (task, conditions, containers).
    const json whole = parseJson(text);
    const std::string facts = whole.is_array() && whole.size() == 8
                                  ? json::array({whole[0], whole[4], whole[5]}).dump()
                                  : text;
    const PodFields short3 = readPodFacts(facts);
    EXPECT_EQ(short3.task, want.task);
    EXPECT_EQ(short3.ready.isTrue, want.ready);
    if (want.ready) {
      EXPECT_TRUE(sameTime(short3.ready.lastTransitionTime, want.readyTime));
    }
    EXPECT_EQ(short3.containersStart, want.containersStart);
    EXPECT_EQ(short3.waitingReasons, want.waitingReasons);
    EXPECT_TRUE(short3.phase.empty() && short3.create.kind == TimeText::kAbsent);
  }
  // The cases above hold what they say (a reading that read nothing would pass most of them).
  EXPECT_EQ(
      readPodFields(R"(["t1",null,null,"Running",[],[)" + running + "],null,null]").containersStart,
      sdk::parseTime("2026-01-02T03:04:05Z"));
  EXPECT_EQ(
      readPodFields(
          R"(["t1",null,null,"Pending",[{"type":"PodScheduled","status":"False"}],null,null,null])")
          .scheduled.isFalse,
      true);
  EXPECT_EQ(podFieldPointers().size(), 8U);
  EXPECT_EQ(podFactPointers(),
            (std::vector<std::string>{podFieldPointers()[0], podFieldPointers()[4],
                                      podFieldPointers()[5]}));
  EXPECT_EQ(readPodFacts(R"(["t1",[],[{"state":{"waiting":{"reason":"A"}}},)"
                         R"({"state":{"waiting":{"reason":"B","message":"b"}}}]])")
                .waitingReasons,
            (std::vector<std::pair<std::string, std::string>>{{"A", ""}, {"B", "b"}}));
}

// Every node's type and value, as text: equal only when the DOMs are the same to the number kind.
std::string shape(const json& j) {
  std::string out = std::to_string(static_cast<int>(j.type())) + ":";
  if (j.is_structured()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      out += (j.is_object() ? it.key() : std::string()) + "(" + shape(*it) + ")";
    return out;
  }
  return out + j.dump();
}

TEST(KusciaModelTest, ParsedFieldsAreTheDomNlohmannWouldBuild) {
  // The fields of the fixtures as the host projects them, and texts at the edges.
  std::vector<std::pair<std::string, std::size_t>> texts;
  for (const char* name : {"pod.json", "service.json", "kusciatask.json", "endpoints.json"}) {
    json obj = test::fixture(name);
    json whole =
        json::array({obj["metadata"], obj.value("status", json()), obj.value("spec", json())});
    texts.emplace_back(whole.dump(), 3);
  }
  for (const char* text :
       {R"([1, -1, 0, 1.5, 1e3, -2.5e-3, 18446744073709551615, 9223372036854775808])",
        R"([123456789012345678901234567890, "big integers become doubles"])",
        R"([{"a": 1, "a": 2, "b": {"c": [true, false, null]}}, "last of a repeated key"])",
        R"(["\u00e9\u4e2d\ud83d\ude00 \"quoted\" \\ \n\t", "ascii"])", R"([[], {}, "", null])"})
    texts.emplace_back(text, json::parse(text).size());
  for (const auto& [text, count] : texts) {
    json want = json::parse(text);
    json got = parseFields(text, count);
    EXPECT_EQ(got, want) << text;
    EXPECT_EQ(shape(got), shape(want)) << text;
  }
  // "-0": nlohmann's parser makes it a signed zero, this an unsigned one; equal and printed alike.
  EXPECT_EQ(parseFields("[-0]", 1), json::parse("[-0]"));
  EXPECT_EQ(parseFields("[-0]", 1).dump(), json::parse("[-0]").dump());
  // parseJson, what parseFields reads with, answers as nlohmann::json::parse(text, nullptr, false).
  EXPECT_EQ(parseJson(R"({"a": [1, "x"]})"), json::parse(R"({"a": [1, "x"]})"));
  EXPECT_TRUE(parseJson(R"({"a": )").is_discarded());
  EXPECT_TRUE(parseJson("").is_discarded());
  // Not JSON, not an array, or another number of fields: every field absent.
  for (const char* bad : {"[1, 2", "{\"a\": 1}", "[1, 2, 3]", "[\"\\ud800\"]", ""}) {
    json got = parseFields(bad, 2);
    EXPECT_EQ(got, json::array({nullptr, nullptr})) << bad;
  }
}

TEST(KusciaModelTest, EventFieldsReadAsParseFieldsDoes) {
  // Field by field, what parseFields gives: as values, as strings (fieldString), null or not,
  // for the fixtures' fields as the host projects them and texts at the edges, spaced or not.
  std::vector<std::pair<std::string, std::size_t>> texts;
  for (const char* name : {"pod.json", "service.json", "kusciatask.json", "endpoints.json"}) {
    json obj = test::fixture(name);
    json whole = json::array({obj["metadata"], obj.value("status", json()),
                              obj.value("spec", json()), obj["metadata"].value("name", "")});
    texts.emplace_back(whole.dump(), 4);
    texts.emplace_back(whole.dump(2), 4);
  }
  texts.emplace_back(R"(["2024-05-20T08:00:00Z", null, "", 12, true, {"a": "b"}, ["x"]])", 7);
  texts.emplace_back(R"(["\u00e9\u4e2d\ud83d\ude00 \"quoted\" \\ \n\t", "a\/b", null])", 3);
  texts.emplace_back("[]", 0);
  // Text the scanner cannot split (another number of fields, not an array, not JSON): parsed
  // whole, every field absent.
  for (const char* bad : {R"(["a", "b"])", R"({"a": 1})", R"(["a", )", ""})
    texts.emplace_back(bad, 3);
  for (const auto& [text, count] : texts) {
    const json want = parseFields(text, count);
    EventFields f(text, count);
    for (std::size_t i = 0; i < count + 1; ++i) { // one past the end: absent
      const json& expected = i < want.size() ? want[i] : json();
      EXPECT_EQ(f.string(i), fieldString(want, i)) << text << " #" << i;
      EXPECT_EQ(f.text(i).has_value(), expected.is_string()) << text << " #" << i;
      EXPECT_EQ(f.isNull(i), expected.is_null()) << text << " #" << i;
      EXPECT_EQ(f.value(i), expected) << text << " #" << i;
      EXPECT_EQ(f.value(i), expected) << "read twice: " << text << " #" << i;
    }
  }
}

TEST(KusciaModelTest, DumpJsonWritesWhatNlohmannWrites) {
  // The fixtures, and texts at the edges: escapes, control characters, UTF-8, numbers of every
  // kind (a double is written by nlohmann), signed zero, empty containers, deep nesting.
  std::vector<json> values;
  for (const char* name : {"pod.json", "service.json", "kusciatask.json", "endpoints.json"})
    values.push_back(test::fixture(name));
  for (const char* text :
       {R"([1, -1, 0, 1.5, 1e3, -2.5e-3, 100.0, 1e20, 18446744073709551615, -9223372036854775808])",
        R"({"\u00e9\u4e2d\ud83d\ude00": "\"quoted\" \\ \n\t\r\b\f \u0001 \u001f \u007f"})",
        R"([[], {}, "", null, true, false, -0, -0.0, [[[{"a": [{"b": {}}]}]]]])",
        R"({"b": 1, "a": 2, "": 3, "a b": {"\/": "/"}})"})
    values.push_back(json::parse(text));
  values.push_back(json::binary({1, 2, 3}));
  values.push_back(json(json::value_t::discarded));
  // Random documents of those pieces.
  std::mt19937 rng(7);
  const std::vector<json> leaves = {
      json("2024-05-20T08:00:00Z"), json("é\n"), json(42),      json(-7),
      json(uint64_t{1} << 63),      json(0.25),  json(nullptr), json(true)};
  std::function<json(int)> make = [&](int depth) -> json {
    int pick = static_cast<int>(rng() % 4);
    if (depth > 3 || pick == 0) return leaves[rng() % leaves.size()];
    json v = pick == 1 ? json::array() : json::object();
    for (std::size_t i = 0, n = rng() % 5; i < n; ++i)
      if (v.is_array())
        v.push_back(make(depth + 1));
      else
        v["k" + std::to_string(rng() % 7)] = make(depth + 1);
    return v;
  };
  for (int i = 0; i < 200; ++i)
    values.push_back(make(0));
  for (const json& v : values) {
    EXPECT_EQ(dumpJson(v), v.dump());
    std::string out = "prefix:";
    appendJson(out, v);
    EXPECT_EQ(out, "prefix:" + v.dump());
  }
  // Doubles at every layout nlohmann uses (decimal, leading zeros, exponent either way, integral
  // values with ".0"): the same bytes. Durations as the timelines hold them (nanoseconds over
  // 1e9), and any double at all: the same value read back, in as many bytes or fewer (Grisu2
  // misses the shortest digits of some durations: 658523.5101106979 for 658523.510110698).
  for (double d : {0.0,
                   -0.0,
                   1.0,
                   -1.0,
                   0.5,
                   1e-4,
                   1.5e-5,
                   1e-5,
                   123456789012345.0,
                   1234567890123456.0,
                   1e15,
                   1e16,
                   1e100,
                   1e-100,
                   5e-324,
                   1.7976931348623157e308,
                   3.14159,
                   0.1,
                   0.30000000000000004,
                   86400.0,
                   1234.5678e10,
                   std::numeric_limits<double>::infinity(),
                   std::nan("")})
    EXPECT_EQ(dumpJson(json(d)), json(d).dump()) << d;
  std::uniform_int_distribution<int64_t> nanos(-int64_t{1} << 40, int64_t{1} << 50);
  for (int i = 0; i < 20000; ++i) {
    double seconds = static_cast<double>(nanos(rng)) / 1e9;
    std::string text = dumpJson(json(seconds)), theirs = json(seconds).dump();
    ASSERT_EQ(json::parse(text).get<double>(), seconds) << theirs;
    ASSERT_LE(text.size(), theirs.size()) << theirs;
    if (text.size() == theirs.size()) {
      ASSERT_EQ(text, theirs);
    }
  }
  std::uniform_int_distribution<uint64_t> bits;
  for (int i = 0; i < 20000; ++i) {
    double d = std::bit_cast<double>(bits(rng));
    if (!std::isfinite(d)) continue;
    std::string text = dumpJson(json(d)), theirs = json(d).dump();
    ASSERT_EQ(json::parse(text).get<double>(), d) << theirs;
    ASSERT_LE(text.size(), theirs.size()) << theirs;
  }
  // A byte to escape, a UTF-8 sequence, or a near miss (0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f) at
  // every place of strings long and short (the check reads 8 bytes at a time).
  for (std::size_t size = 1; size <= 24; ++size)
    for (std::size_t at = 0; at < size; ++at)
      for (std::string odd : {"\x01", "\x1f", " ", "!", "\"", "\\", "[", "]", "\x7f", "é"}) {
        std::string text = std::string(size, 'a').replace(at, 1, odd);
        ASSERT_EQ(dumpJson(json(text)), json(text).dump()) << size << " " << at;
        json keyed = {{text, 1}};
        ASSERT_EQ(dumpJson(keyed), keyed.dump()) << size << " " << at;
      }
  // Invalid UTF-8 throws as dump() does.
  json bad = std::string("\xff");
  EXPECT_THROW(dumpJson(bad), json::type_error);
  EXPECT_THROW(dumpJson(json{{"k", bad}}), json::type_error);
}

// task-history writes a task's document as text (timeline_text.h): the text must be what
// dumpJson() writes of the document fromParts() builds, and the times those of its entries.
TEST(TimelineTextTest, TheTextIsTheDumpOfTheDocumentAndTheTimesItsEntries) {
  namespace timeline = model::timeline;
  const json pods = json::parse(R"({
    "alice/p-0": {"createTime": "2024-05-20T08:00:00Z", "scheduleTime": "2024-05-20T08:00:00.5Z",
                  "startTime": "2024-05-20T08:00:01.250000Z", "readyTime": "2024-05-20T08:00:09Z",
                  "firstReadyTime": "2024-05-20T08:00:08.1Z",
                  "imagePullStartTime": "2024-05-20T08:00:02Z",
                  "imagePullEndTime": "2024-05-20T08:00:01Z",
                  "containersStartTime": "2024-05-20T08:00:07Z", "podPhase": "Running",
                  "reasons": {"imagePull": {"reason": "Pulling", "message": "a \"big\" image",
                                            "since": "2024-05-20T08:00:02Z"},
                              "starting": 7}},
    "alice/p-1": {"createTime": "2024-05-20T08:00:05Z", "startTime": "2024-05-20T08:00:04Z",
                  "readyTime": 12, "podPhase": {"odd": true}, "reason": "OOMKilled",
                  "terminationLog": "container[c] terminated state reason \"OOMKilled\"\u0007",
                  "message": 5},
    "alice/shared": {"createTime": "2024-05-20T08:00:00Z"},
    "bob/p-0": {"createTime": "not a time"},
    "carol/é-0": "not an object",
    "noslash": {}
  })");
  const json services = json::parse(R"({
    "alice/svc": {"createTime": "2024-05-20T08:00:00Z", "readyTime": "2024-05-20T08:00:03.000001Z"},
    "alice/shared": {"createTime": "2024-05-20T08:00:01Z", "readyTime": "2024-05-20T07:59:59Z"},
    "bob/svc": {"readyTime": "2024-05-20T08:00:03Z"}
  })");
  const json running = "Running", number = 3, created = "2024-05-20T07:59:58Z";
  const json failed = "Failed", ended = "2024-05-20T08:01:00Z",
             why = "TaskResourceGroupPhaseFailed",
             said = "The task was not scheduled within 300 seconds of its entire lifecycle";
  const std::vector<std::pair<std::string, std::string>> uids = {{"alice/p-0", "u\"0"},
                                                                 {"alice/shared", "u-1"}};
  struct Case {
    timeline::TaskParts parts;
    std::string uid;
  };
  const Case cases[] = {
      {{"t-1", "cross-domain", &running, &created, &pods, &services}, "uid-1"},
      {{"t-5", "cross-domain", &failed, &created, &pods, &services, &ended, &why, &said}, ""},
      {{"t-6", "cross-domain", &failed, nullptr, nullptr, nullptr, &number, &number, &said}, ""},
      {{"t-2", "cross-domain", &number, nullptr, &pods, nullptr}, ""},
      {{"t-3", "cross-domain", nullptr, &number, nullptr, &services}, "x"},
      {{"t-4", "cross-domain", nullptr, nullptr, nullptr, nullptr}, ""},
  };
  for (const Case& c : cases) {
    json doc = timeline::fromParts(c.parts);
    for (const auto& [key, uid] : uids)
      if (doc["entries"].contains(key)) doc["entries"][key]["uid"] = uid;
    if (!c.uid.empty()) doc["uid"] = c.uid;
    const TimelineText text = timelineText(c.parts, uids, c.uid);
    EXPECT_EQ(text.json, dumpJson(doc)) << c.parts.name;
    EXPECT_EQ(json::parse(text.json), doc) << c.parts.name;
    EXPECT_EQ(text.phase, doc.value("phase", json()).is_string() ? doc["phase"] : json(""));
    EXPECT_EQ(text.createTime,
              doc.value("createTime", json()).is_string() ? doc["createTime"] : json(""));
    ASSERT_EQ(text.entries.size(), doc["entries"].size()) << c.parts.name;
    std::size_t i = 0;
    for (const auto& [key, entry] : doc["entries"].items()) {
      const timeline::EntryTimes want = timeline::entryTimes(key, entry);
      const timeline::EntryTimes& got = text.entries[i++];
      EXPECT_EQ(got.key, want.key);
      EXPECT_EQ(got.pod, want.pod) << key;
      for (auto [name, member] : timeline::EntryTimes::fields())
        EXPECT_EQ(got.*member, want.*member) << key << " " << name;
      EXPECT_EQ(got.reasons, want.reasons) << key;
      EXPECT_EQ(got.waitingToStart, want.waitingToStart) << key;
      EXPECT_EQ(got.evidenceReason, want.evidenceReason) << key;
      EXPECT_EQ(got.evidenceMessage, want.evidenceMessage) << key;
      EXPECT_EQ(got.terminationLog, want.terminationLog) << key;
    }
    const timeline::TaskEnd end = timeline::TaskEnd::of(doc);
    EXPECT_EQ(text.end.phase, end.phase) << c.parts.name;
    EXPECT_EQ(text.end.completionTime, end.completionTime) << c.parts.name;
    EXPECT_EQ(text.end.reason, end.reason) << c.parts.name;
    EXPECT_EQ(text.end.message, end.message) << c.parts.name;
  }
  // What the status says of a pod and of the task is kept as excerpts (no control character),
  // only where it is a text.
  const json failedDoc = json::parse(timelineText(cases[1].parts, uids, "").json);
  EXPECT_EQ(failedDoc["entries"]["alice/p-1"]["evidence"],
            json({{"reason", "OOMKilled"},
                  {"terminationLog", "container[c] terminated state reason \"OOMKilled\""}}));
  EXPECT_EQ(failedDoc["evidence"], json({{"reason", why}, {"message", said}}));
  EXPECT_EQ(failedDoc["completionTime"], ended);
  EXPECT_FALSE(failedDoc["entries"]["alice/p-0"].contains("evidence"));
  EXPECT_FALSE(json::parse(timelineText(cases[2].parts, uids, "").json).contains("completionTime"));
  // The cases above hold what they are meant to: a negative duration, a missing time, a service
  // that replaces the pod of its key, an escaped uid.
  const json doc = json::parse(timelineText(cases[0].parts, uids, "").json);
  EXPECT_EQ(doc["entries"]["alice/p-0"]["negative"], json({"imagePull"}));
  EXPECT_EQ(doc["entries"]["alice/p-1"]["missing"], json({"readyTime"}));
  EXPECT_EQ(doc["entries"]["alice/shared"]["kind"], "service");
  EXPECT_EQ(doc["entries"]["alice/p-0"]["uid"], "u\"0");
}

// task-history writes a recording from the texts of the task's status entries where the scanner
// reads them as the parser would (DomainPods::documentTextOf), else from the entries parsed
// (documentText): both write the same document and times, with this domain's facts (the first
// Ready, every container running, the pulls, the reasons and their times, the pods' UIDs) merged
// alike; and what Kuscia's statuses hold takes the texts' way.
TEST(TimelineTextTest, TheDocumentFromTheEntriesTextsIsTheOneFromTheEntriesParsed) {
  namespace timeline = model::timeline;
  DomainPods facts;
  const auto always = [](const std::string&) { return true; };
  auto pod = [&](const std::string& key, const std::string& uid, const std::string& fields) {
    sdk::Event e;
    e.type = KH_EVENT_ADDED;
    e.key = key;
    e.uid = uid;
    e.fieldsJson = fields;
    facts.onPod(e, 1716192000000000000, always, always);
  };
  auto podEvent = [&](const std::string& name, const std::string& uid, const std::string& reason,
                      const std::string& message, const std::string& at) {
    const std::string fields =
        json::array({"Pod", name, uid, reason, message, at, nullptr, nullptr}).dump();
    sdk::Event e;
    e.type = KH_EVENT_ADDED;
    const std::string key = "alice/ev-" + name + reason;
    e.key = key;
    e.fieldsJson = fields;
    facts.onPodEvent(e, 1716192000000000000, always);
  };
  // alice/p-0: ready first at 08:00:08.1, its containers running at 08:00:07, its image pulled
  // from 08:00:02 to 08:00:05 and a reason with a quote; alice/p-1 only its UID (with a quote);
  // alice/p-2 another task's.
  pod("alice/p-0", "u-0",
      R"(["t-1",[{"type":"Ready","status":"True","lastTransitionTime":"2024-05-20T08:00:08.1Z"}],)"
      R"([{"state":{"running":{"startedAt":"2024-05-20T08:00:07Z"}}}]])");
  podEvent("p-0", "u-0", "Pulling", "Pulling image \"big\"", "2024-05-20T08:00:02Z");
  podEvent("p-0", "u-0", "Pulled", "", "2024-05-20T08:00:05Z");
  pod("alice/p-1", "u\"1",
      R"(["t-1",[],[{"state":{"waiting":{"reason":"ErrImagePull","message":"a\nb"}}}]])");
  pod("alice/p-2", "u-2",
      R"(["t-9",[{"type":"Ready","status":"True","lastTransitionTime":"2024-05-20T08:00:01Z"}],[]])");

  struct Case {
    std::string pods, services;
    bool texts; // the texts' way is taken
  };
  const std::string p0 =
      R"("alice/p-0":{"createTime":"2024-05-20T08:00:00Z","namespace":"alice","podName":"p-0",)"
      R"("podPhase":"Running","readyTime":"2024-05-20T08:00:09Z","startTime":"2024-05-20T08:00:01.25Z"})";
  const Case cases[] = {
      // Kuscia's statuses: every party's entries, the other's not kept.
      {"{" + p0 +
           R"(,"alice/p-1":{"createTime":"2024-05-20T08:00:00Z","podPhase":"Pending"},)"
           R"("bob/p-0":{"createTime":"2024-05-20T08:00:00Z","readyTime":"2024-05-20T08:00:03Z"}})",
       R"({"alice/svc":{"createTime":"2024-05-20T08:00:00Z","readyTime":"2024-05-20T08:00:10.000001Z",)"
       R"("namespace":"alice","portNumber":8080,"serviceName":"svc"},"bob/svc":{"createTime":"x"}})",
       true},
      // A readyTime before the first Ready seen (another incarnation's), a time that is not one,
      // a scheduleTime, an escaped key, a pod of another task, a service of a pod's key, nulls.
      {R"({"alice/p-0":{"createTime":"2024-05-20T08:00:00Z","readyTime":"2024-05-20T08:00:08Z",)"
       R"("scheduleTime":"2024-05-20T08:00:00.5Z","startTime":"not a time"},)"
       R"("alice/p-\u00e9":{"createTime":"2024-05-20T08:00:00Z"},"alice/p-2":{"readyTime":"2024-05-20T08:00:02Z"}})",
       R"({"alice/p-1":{"createTime":"2024-05-20T08:00:01Z"}})", true},
      {"null", "{}", true},
      {"{" + p0 + "}", "null", true},
      // A service of a held pod's key: the service's entry, with the pod's UID.
      {"{" + p0 + "}", R"({"alice/p-0":{"createTime":"2024-05-20T08:00:01Z"}})", true},
      // What the scanner leaves to the parser: the same document all the same.
      {R"({"alice/p-0":{"createTime":"2024-05-20T08:00:00Z","podPhase":"Run\"ning"}})", "{}",
       false},
      {R"({"alice/p-0":{"createTime":"2024-05-20T08:00:00Z","podPhase":null}})", "{}", false},
      {R"({"alice/p-0":{"createTime":"2024-05-20T08:00:00Z","reasons":{"starting":{"reason":"X"}}}})",
       "{}", false},
      {R"({"alice/p-1":{"createTime":1716192000}})", "{}", false},
      {R"({"alice/p-1":{"create\u0054ime":"2024-05-20T08:00:00Z"}})", "{}", false},
      // What the status says of a pod (user data: excerpts the DOM writes).
      {R"({"alice/p-1":{"createTime":"2024-05-20T08:00:00Z","reason":"Unschedulable"}})", "{}",
       false},
  };
  const auto keep = [](std::string_view key) { return key.substr(0, 6) == "alice/"; };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pods + " " + c.services);
    for (const char* phase : {"Running", ""})
      for (const char* create : {"2024-05-20T07:59:58Z", ""}) {
        auto podTexts = entryTextsWhere(c.pods, keep);
        auto serviceTexts = entryTextsWhere(c.services, keep);
        ASSERT_TRUE(podTexts && serviceTexts);
        TaskTexts texts{"t-1", "cross-domain"};
        if (*phase != 0) texts.phase = phase;
        if (*create != 0) texts.createTime = create;
        // The task's end, when it has one, in both.
        const json ended = "2024-05-20T08:01:00Z", said = "failed party[\"bob\"]\n";
        if (*phase == 0) {
          texts.completionTime = ended.get_ref<const std::string&>();
          texts.message = said.get_ref<const std::string&>();
        }
        const auto fromTexts = facts.documentTextOf(texts, *podTexts, *serviceTexts, "uid-1");
        ASSERT_EQ(fromTexts.has_value(), c.texts);
        if (!fromTexts) continue;
        json pods = *entriesWhere(c.pods, keep), services = *entriesWhere(c.services, keep);
        const json createJson = *create != 0 ? json(create) : json();
        const TimelineText want = facts.documentText({"t-1",
                                                      "cross-domain",
                                                      phase,
                                                      &createJson,
                                                      nullptr,
                                                      &services,
                                                      &pods,
                                                      {},
                                                      *phase == 0 ? &ended : nullptr,
                                                      nullptr,
                                                      *phase == 0 ? &said : nullptr},
                                                     "uid-1");
        EXPECT_EQ(fromTexts->json, want.json);
        EXPECT_EQ(fromTexts->phase, want.phase);
        EXPECT_EQ(fromTexts->createTime, want.createTime);
        EXPECT_EQ(fromTexts->end.completionTime, want.end.completionTime);
        EXPECT_EQ(fromTexts->end.message, want.end.message);
        ASSERT_EQ(fromTexts->entries.size(), want.entries.size());
        for (std::size_t i = 0; i < want.entries.size(); ++i) {
          const timeline::EntryTimes &got = fromTexts->entries[i], &w = want.entries[i];
          EXPECT_EQ(got.key, w.key);
          EXPECT_EQ(got.pod, w.pod) << w.key;
          for (auto [name, member] : timeline::EntryTimes::fields())
            EXPECT_EQ(got.*member, w.*member) << w.key << " " << name;
          EXPECT_EQ(got.reasons, w.reasons) << w.key;
        }
      }
  }
  // The cases hold what they are meant to: this domain's facts merged, the escapes written.
  const std::string onlyP0 = "{" + p0 + "}";
  auto podTexts = entryTextsWhere(onlyP0, keep);
  const json doc =
      json::parse(facts.documentTextOf({"t-1", "cross-domain"}, *podTexts, {}, "")->json);
  const json& e = doc["entries"]["alice/p-0"];
  EXPECT_EQ(e["times"]["firstReadyTime"], "2024-05-20T08:00:08.1Z");
  EXPECT_EQ(e["times"]["containersStartTime"], "2024-05-20T08:00:07Z");
  EXPECT_EQ(e["times"]["imagePullStartTime"], "2024-05-20T08:00:02Z");
  EXPECT_EQ(e["times"]["imagePullEndTime"], "2024-05-20T08:00:05Z");
  EXPECT_EQ(e["reasons"]["pulling"]["reason"], "Pulled");
  EXPECT_TRUE(e["reasons"]["pulling"]["since"].is_number_integer());
  EXPECT_EQ(e["uid"], "u-0");
  EXPECT_EQ(e["durations"]["startToReady"], 6.85);
}

// A p2p initiator's host alone: the stub TaskResource its cluster keeps of bob (label
// interconn-protocol-type=kuscia, in bob's namespace) puts bob's reservation in the documents
// otel-export and task-history build (DomainPods), in the DOM and in both texts alike, and in
// the partner entries the summary reads; not once bob's pods are in the status, and from the
// task's kept facts once the stub is gone and the host restarted.
TEST(TimelineTextTest, APartnersStubIsInEveryDocumentOfTheTask) {
  DomainPods facts;
  auto stub = [](const char* phase, const char* reserved) {
    json tr = {
        {"metadata",
         {{"namespace", "bob"},
          {"name", "t-1-bob"},
          {"annotations", {{"kuscia.secretflow/task-id", "t-1"}}}}},
        {"status",
         {{"phase", phase}, {"startTime", "2024-05-20T08:00:00Z"}, {"conditions", json::array()}}}};
    if (reserved != nullptr)
      tr["status"]["conditions"].push_back(
          {{"type", "Reserved"}, {"status", "True"}, {"lastTransitionTime", reserved}});
    return tr;
  };
  sdk::Subscription sub = control::partnerTaskResourceSubscription();
  auto deliver = [&](const json& tr) {
    json fields = json::array();
    for (const auto& f : sub.fields) {
      json::json_pointer ptr(f);
      fields.push_back(tr.contains(ptr) ? tr.at(ptr) : json());
    }
    const std::string text = fields.dump();
    sdk::Event e;
    e.type = KH_EVENT_MODIFIED;
    e.key = "bob/t-1-bob";
    e.fieldsJson = text;
    return facts.onTaskResource(e);
  };
  EXPECT_EQ(deliver(stub("Reserving", nullptr)), "t-1");
  EXPECT_EQ(deliver(stub("Reserved", "2024-05-20T08:00:06Z")), "t-1");
  const std::string alice =
      R"({"alice/p-0":{"createTime":"2024-05-20T08:00:00Z","scheduleTime":"2024-05-20T08:00:06Z"}})";
  const auto all = [](std::string_view) { return true; };
  auto texts = [&](const std::string& pods, std::string_view kept = {}) {
    auto podTexts = entryTextsWhere(pods, all);
    return facts.documentTextOf({"t-1", "cross-domain"}, *podTexts, {}, "", kept);
  };
  auto dom = [&](const std::string& pods, std::string_view kept = {}) {
    const json p = json::parse(pods);
    return facts.document({"t-1", "cross-domain", "", nullptr, &p, nullptr, nullptr, kept});
  };
  const json doc = dom(alice);
  const json want = {{"taskResource", "bob/t-1-bob"},
                     {"reservingTime", "2024-05-20T08:00:00Z"},
                     {"reservedTime", "2024-05-20T08:00:06Z"}};
  EXPECT_EQ(doc["partnerReservations"], json({{"bob", want}}));
  const auto text = texts(alice);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->json, dumpJson(doc));
  ASSERT_EQ(text->partners.size(), 1U);
  EXPECT_EQ(text->partners[0].key, "bob/t-1-bob");
  EXPECT_TRUE(text->partners[0].partner);
  ASSERT_EQ(timeline::partnerEntries(doc).size(), 1U);
  EXPECT_EQ(timeline::partnerEntries(doc)[0].reservedTime, text->partners[0].reservedTime);
  // bob's pods in the status (a merged view): they carry his reservation, not the stub.
  const std::string both =
      R"({"alice/p-0":{"createTime":"2024-05-20T08:00:00Z"},"bob/p-0":{"createTime":"2024-05-20T08:00:00Z"}})";
  EXPECT_FALSE(dom(both).contains("partnerReservations"));
  EXPECT_TRUE(texts(both)->partners.empty());
  // A restarted host, the stub gone: the task's kept facts have it.
  DomainPods restarted;
  const std::string kept = *keptFactsText(json::object(), {{"bob", want}});
  const json p = json::parse(alice);
  EXPECT_EQ(restarted.document({"t-1", "cross-domain", "", nullptr, &p, nullptr, nullptr,
                                kept})["partnerReservations"],
            doc["partnerReservations"]);
}

TEST(KusciaModelTest, TaskIndexFollowsObjectsBetweenTasks) {
  TaskIndex index;
  index.assign("alice/p0", "t1");
  index.assign("alice/p1", "t1");
  index.assign("alice/p1", "t2"); // moved
  EXPECT_EQ(index.members("t1"), std::set<std::string>{"alice/p0"});
  EXPECT_EQ(index.members("t2"), std::set<std::string>{"alice/p1"});
  index.erase("alice/p0");
  EXPECT_TRUE(index.members("t1").empty());
  EXPECT_EQ(index.tasks(), 1u); // an emptied task is forgotten
  index.assign("alice/p1", "");
  EXPECT_EQ(index.tasks(), 0u);
}

struct Obj {
  uint64_t uid = 0;
  const std::string* task = nullptr;
  int seen = 0;
};

template <class T> std::vector<std::string> keysOf(const TaskObjects<T>& objs, const char* task) {
  auto keys = objs.members(task);
  return {keys.begin(), keys.end()};
}

TEST(KusciaModelTest, TaskObjectsStartANewRecordForANewIncarnation) {
  TaskObjects<Obj> objs;
  Obj* o = objs.apply("alice/p", "uid-1", "t1");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->uid, uidDigest("uid-1"));
  EXPECT_NE(uidDigest("uid-1"), uidDigest("uid-2"));
  EXPECT_EQ(uidDigest(""), 0u);
  o->seen = 1;
  EXPECT_EQ(objs.apply("alice/p", "uid-1", "t1")->seen, 1);
  EXPECT_EQ(objs.apply("alice/p", "uid-2", "t1")->seen, 0); // recreated
  EXPECT_EQ(objs.apply("alice/p", "uid-2", ""), nullptr);   // no task now
  EXPECT_TRUE(objs.members("t1").empty());
  objs.apply("alice/q", "uid-3", "t1");
  EXPECT_EQ(objs.forget("alice/q"), "t1"); // deleted: the task it belonged to
  EXPECT_EQ(objs.forget("alice/q"), "");
  EXPECT_EQ(objs.size(), 0u);
  EXPECT_EQ(objs.tasks(), 0u);
  // An object that names another task moves to it: its old task no longer lists it.
  objs.apply("alice/r", "uid-4", "t1");
  objs.apply("alice/s", "uid-5", "t1");
  objs.apply("alice/r", "uid-4", "t2");
  EXPECT_EQ(keysOf(objs, "t1"), std::vector<std::string>{"alice/s"});
  EXPECT_EQ(keysOf(objs, "t2"), std::vector<std::string>{"alice/r"});
  EXPECT_EQ(*objs.at("alice/r").task, "t2");
  objs.apply("alice/r", "uid-6", "t2"); // recreated in the same task: still listed
  EXPECT_EQ(keysOf(objs, "t2"), std::vector<std::string>{"alice/r"});
  EXPECT_EQ(*objs.at("alice/r").task, "t2");
  EXPECT_EQ(objs.forget("alice/s"), "t1");
  EXPECT_EQ(objs.tasks(), 1u); // an emptied task is forgotten
  // A task's keys in order, whatever order they came in; the task's name is held once.
  for (const char* key : {"bob/c", "bob/a", "bob/d", "bob/b"})
    objs.apply(key, key, "t3");
  EXPECT_EQ(keysOf(objs, "t3"), (std::vector<std::string>{"bob/a", "bob/b", "bob/c", "bob/d"}));
  EXPECT_EQ(objs.at("bob/a").task, objs.at("bob/d").task);
  objs.forget("bob/b");
  EXPECT_EQ(keysOf(objs, "t3"), (std::vector<std::string>{"bob/a", "bob/c", "bob/d"}));
  EXPECT_EQ(objs.members("t3").size(), 3u);
}

// Pod entries, each with its fields as (field, time text or "" to clear).
using PodEntries =
    std::vector<std::pair<std::string, std::vector<std::pair<TimeField, std::string>>>>;
StatusPatch podPatch(const PodEntries& entries) {
  StatusPatch patch;
  for (const auto& [key, fields] : entries) {
    StatusPatch::Entry e{StatusPatch::kPods, key};
    for (const auto& [field, text] : fields)
      e.set(field, text.empty() ? StatusPatch::kClear : *parseTime(text));
    patch.add(std::move(e));
  }
  return patch;
}

TEST(KusciaModelTest, AContestKeepsEachEntrysFieldsApartAsEntriesComeAndGo) {
  testing::FakeHost fake("alice");
  WriteContest contest(sdk::Host(fake.api(), fake.ctx()), "kuscia_test", 2);
  auto rv = [](int v) { // the version the server's answer carries
    return responseVersion(R"({"metadata":{"resourceVersion":")" + std::to_string(v) + "\"}}");
  };
  constexpr auto kCreate = TimeField::kCreate, kReady = TimeField::kReady;
  const json a = {{"createTime", "2024-05-20T08:00:00Z"}, {"readyTime", "2024-05-20T08:00:09Z"}};
  // Entries written in two writes, "alice/b" first: the task's keys hold it before "alice/a".
  contest.wrote("t", podPatch({{"alice/b", {{kCreate, "2024-05-20T08:00:01Z"}}}}), rv(10));
  contest.wrote("t",
                podPatch({{"alice/a",
                           {{kCreate, "2024-05-20T08:00:00Z"}, {kReady, "2024-05-20T08:00:09Z"}}}}),
                rv(11));
  // Another writer replaces a's readyTime twice: yielded, a's createTime and b untouched.
  json theirs = {{"alice/a", a}, {"alice/b", {{"createTime", "2024-05-20T08:00:01Z"}}}};
  theirs["alice/a"]["readyTime"] = "2024-05-20T08:00:30Z";
  contest.observed("t", "12", theirs, json::object());
  contest.wrote("t", podPatch({{"alice/a", {{kReady, "2024-05-20T08:00:09Z"}}}}), rv(13));
  contest.observed("t", "14", theirs, json::object());
  EXPECT_TRUE(contest.yielded("t", "podStatuses", "alice/a", "readyTime"));
  EXPECT_FALSE(contest.yielded("t", "podStatuses", "alice/a", "createTime"));
  EXPECT_FALSE(contest.yielded("t", "podStatuses", "alice/b", "createTime"));
  EXPECT_FALSE(contest.yielded("t", "serviceStatuses", "alice/a", "readyTime"));
  EXPECT_EQ(fake.metric("kuscia_test_yielded_fields_total", "readyTime"), 1);
  EXPECT_TRUE(fake.logged("task t alice/a: readyTime yielded to another writer"));
  // b's field is cleared, so nothing of b is left to remember: its key goes, a's moves.
  contest.wrote("t", podPatch({{"alice/b", {{kCreate, ""}}}}), rv(15));
  contest.observed("t", "16", theirs, json::object());
  EXPECT_TRUE(contest.yielded("t", "podStatuses", "alice/a", "readyTime"));
  // What is yielded is taken out of a patch; the rest stays, and an entry left with no time goes.
  StatusPatch patch = podPatch(
      {{"alice/a", {{kReady, "2024-05-20T08:00:09Z"}, {TimeField::kStart, "2024-05-20T08:00:05Z"}}},
       {"alice/b", {{kCreate, "2024-05-20T08:00:01Z"}}}});
  contest.filter("t", patch);
  EXPECT_EQ(patch.toJson(), podPatch({{"alice/a", {{TimeField::kStart, "2024-05-20T08:00:05Z"}}},
                                      {"alice/b", {{kCreate, "2024-05-20T08:00:01Z"}}}})
                                .toJson());
  StatusPatch onlyYielded = podPatch({{"alice/a", {{kReady, "2024-05-20T08:00:09Z"}}}});
  onlyYielded.entries()[0].identify = true;
  contest.filter("t", onlyYielded);
  EXPECT_TRUE(onlyYielded.empty());
  // A new incarnation of a (another createTime) starts afresh.
  StatusPatch reborn = podPatch(
      {{"alice/a", {{kCreate, "2024-05-20T09:00:00Z"}, {kReady, "2024-05-20T09:00:09Z"}}}});
  const json rebornJson = reborn.toJson();
  contest.filter("t", reborn);
  EXPECT_EQ(reborn.toJson(), rebornJson);
  EXPECT_FALSE(contest.yielded("t", "podStatuses", "alice/a", "readyTime"));
}

// A host restarted: it wrote no createTime of its own when another writer replaced both the
// entry's createTime and its readyTime. The readyTime is yielded once, even when a write that was
// already on its way lands after the yield and is overwritten in turn, and the yield holds for
// the incarnation the host's own next patch names, not the other writer's createTime.
TEST(KusciaModelTest, AFieldIsYieldedOnceForTheHostsOwnIncarnation) {
  testing::FakeHost fake("alice");
  WriteContest contest(sdk::Host(fake.api(), fake.ctx()), "kuscia_test", 2);
  auto rv = [](int v) {
    return responseVersion(R"({"metadata":{"resourceVersion":")" + std::to_string(v) + "\"}}");
  };
  constexpr auto kCreate = TimeField::kCreate, kReady = TimeField::kReady;
  const json theirs = {
      {"alice/a", {{"createTime", "2000-05-20T08:00:00Z"}, {"readyTime", "2000-05-20T08:00:09Z"}}}};
  auto ours = [kReady] { return podPatch({{"alice/a", {{kReady, "2024-05-20T08:00:09Z"}}}}); };
  contest.wrote("t", ours(), rv(10));
  contest.observed("t", "11", theirs, json::object());
  contest.wrote("t", ours(), rv(12));
  contest.observed("t", "13", theirs, json::object());
  EXPECT_TRUE(contest.yielded("t", "podStatuses", "alice/a", "readyTime"));
  contest.wrote("t", ours(), rv(14)); // sent before the yield
  contest.observed("t", "15", theirs, json::object());
  EXPECT_EQ(fake.metric("kuscia_test_yielded_fields_total", "readyTime"), 1);
  // The host's own patch carries its own createTime: the yielded incarnation, so the field stays
  // out; then, and only then, another createTime is a new incarnation.
  StatusPatch own = podPatch(
      {{"alice/a", {{kCreate, "2024-05-20T08:00:00Z"}, {kReady, "2024-05-20T08:00:09Z"}}}});
  contest.filter("t", own);
  EXPECT_EQ(own.toJson(), podPatch({{"alice/a", {{kCreate, "2024-05-20T08:00:00Z"}}}}).toJson());
  EXPECT_TRUE(contest.yielded("t", "podStatuses", "alice/a", "readyTime"));
  StatusPatch reborn = podPatch(
      {{"alice/a", {{kCreate, "2024-05-20T09:00:00Z"}, {kReady, "2024-05-20T09:00:09Z"}}}});
  contest.filter("t", reborn);
  EXPECT_FALSE(contest.yielded("t", "podStatuses", "alice/a", "readyTime"));
}

TEST(KusciaModelTest, AStatusPatchWritesWhatDumpWritesOfTheSameDocument) {
  StatusPatch patch;
  const int64_t t0 = *parseTime("2024-05-20T08:00:00Z");
  // Added out of order: kept by group, then key, as a JSON object's members are.
  StatusPatch::Entry svc{StatusPatch::kServices, "alice/svc-1"};
  svc.identify = true;
  svc.set(TimeField::kCreate, t0);
  svc.set(TimeField::kReady, t0 + 2500000000); // a fraction: kept as given
  patch.add(svc);
  StatusPatch::Entry pod{StatusPatch::kPods, "alice/pod-b"};
  pod.set(TimeField::kReady, t0 + 9 * kSecond);
  pod.set(TimeField::kStart, StatusPatch::kClear); // an earlier incarnation's
  pod.set(TimeField::kSchedule, t0 + kSecond);
  patch.add(pod);
  StatusPatch::Entry fresh{StatusPatch::kPods, "alice/pod-a"};
  fresh.identify = true; // podPhase unknown: Pending, as Kuscia's CRD requires one
  fresh.set(TimeField::kCreate, t0);
  fresh.set(TimeField::kStart, t0 + kSecond);
  fresh.set(TimeField::kCreate, t0 - kSecond); // set again: replaced, not repeated
  patch.add(fresh);
  StatusPatch::Entry odd{StatusPatch::kPods, "alice/q\"uote"};
  odd.identify = true;
  odd.podPhase = "Running";
  odd.set(TimeField::kReady, t0);
  patch.add(odd);

  const json doc = patch.toJson();
  EXPECT_EQ(doc, json::parse(R"({
    "podStatuses": {
      "alice/pod-a": {"createTime": "2024-05-20T07:59:59Z", "namespace": "alice",
                      "podName": "pod-a", "podPhase": "Pending",
                      "startTime": "2024-05-20T08:00:01Z"},
      "alice/pod-b": {"readyTime": "2024-05-20T08:00:09Z", "scheduleTime": "2024-05-20T08:00:01Z",
                      "startTime": null},
      "alice/q\"uote": {"namespace": "alice", "podName": "q\"uote", "podPhase": "Running",
                        "readyTime": "2024-05-20T08:00:00Z"}},
    "serviceStatuses": {
      "alice/svc-1": {"createTime": "2024-05-20T08:00:00Z", "namespace": "alice",
                      "readyTime": "2024-05-20T08:00:02.5Z", "serviceName": "svc-1"}}})"));
  std::string text;
  patch.appendJson(text);
  EXPECT_EQ(text, doc.dump());
  EXPECT_EQ(taskStatusPatch("cross-domain", "t1", patch).body, json({{"status", doc}}).dump());
  EXPECT_TRUE(patch.touches(StatusPatch::kPods));
  EXPECT_TRUE(patch.touches(StatusPatch::kServices));
  EXPECT_EQ(patch.entries()[0].time(TimeField::kCreate), t0 - kSecond);
  EXPECT_FALSE(patch.entries()[1].time(TimeField::kStart)); // cleared

  // Applied to a status's map as the merge patch of its document is.
  json held = json::parse(R"({"alice/pod-b": {"namespace": "alice", "podName": "pod-b",
                                "startTime": "2024-05-19T08:00:00Z", "reason": "theirs"},
                              "bob/pod": {"namespace": "bob"}, "alice/q\"uote": 7})");
  json merged = held;
  merged.merge_patch(doc["podStatuses"]);
  patch.applyTo(StatusPatch::kPods, held);
  EXPECT_EQ(held, merged);
  json none;
  patch.applyTo(StatusPatch::kServices, none);
  EXPECT_EQ(none, doc["serviceStatuses"]);

  EXPECT_EQ(StatusPatch().toJson(), json::object());
  std::string empty;
  StatusPatch().appendJson(empty);
  EXPECT_EQ(empty, "{}");
}

TEST(KusciaModelTest, TheStatusWriteIsAMergePatchOfTheStatusSubresource) {
  auto r = taskStatusPatch("cross-domain", "t1", {{"phase", "Running"}});
  EXPECT_EQ(r.verb, KH_KUBE_PATCH);
  EXPECT_EQ(r.patchType, KH_PATCH_MERGE);
  EXPECT_EQ(r.group, "kuscia.secretflow");
  EXPECT_EQ(r.resource, "kusciatasks");
  EXPECT_EQ(r.subresource, "status");
  EXPECT_EQ(r.namespaceName, "cross-domain");
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"status":{"phase":"Running"}})"));
}

TEST(KusciaModelTest, BackoffDoublesUpToItsMaximumAndResets) {
  Backoff b(200, 1000);
  EXPECT_EQ(b.next(), 200);
  EXPECT_EQ(b.next(), 400);
  EXPECT_EQ(b.next(), 800);
  EXPECT_EQ(b.next(), 1000);
  EXPECT_EQ(b.next(), 1000);
  b.reset();
  EXPECT_EQ(b.next(), 200);
}

TEST(KusciaModelTest, ATimeAndItsWholeSecondsAreOneTime) {
  int64_t t = *parseTime("2024-05-20T08:00:02.250Z");
  EXPECT_TRUE(sameTime(t, t));
  EXPECT_TRUE(sameTime(*parseTime("2024-05-20T08:00:02Z"), t));  // metav1.Time's precision
  EXPECT_FALSE(sameTime(*parseTime("2024-05-20T08:00:03Z"), t)); // rounded up is another time
  EXPECT_FALSE(sameTime(t, *parseTime("2024-05-20T08:00:02Z"))); // a finer one is not ours
  int64_t before1970 = *parseTime("1969-12-31T23:59:59.5Z");
  EXPECT_TRUE(sameTime(*parseTime("1969-12-31T23:59:59Z"), before1970));
}

TEST(StatusWriterConfigTest, EveryStatusWritingPluginTakesTheSameKeys) {
  std::vector<std::string> names;
  for (const auto& k : statusWriterKeys())
    names.push_back(k.key);
  EXPECT_EQ(names,
            (std::vector<std::string>{"taskNamespace", "coalesceMillis", "yieldAfterOverwrites"}));
  StatusWriterConfig c;
  readStatusWriterConfig(sdk::ConfigReader(R"({"yieldAfterOverwrites": 5})", statusWriterKeys()),
                         c);
  EXPECT_EQ(c.yieldAfterOverwrites, 5);
  EXPECT_EQ(c.coalesceMillis, 150);
  StatusWriterConfig bad;
  EXPECT_THROW(readStatusWriterConfig(
                   sdk::ConfigReader(R"({"yieldAfterOverwrites": 0})", statusWriterKeys()), bad),
               sdk::ConfigError);
}

TEST(StatusEntriesTest, OwnEntriesAreParsedAndTheOthersOnlyCounted) {
  auto split = splitEntries(R"( {"alice/p":{"createTime":"t1","readyTime":"t2"},
      "bob/p" : {"readyTime":null,"x":[1,{"y":"}]\"{"}]},
      "bob/q":{"readyTime":"t3","s":"a\\\"b"}, "carol/r":{} } )",
                            "alice/");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->own, json::parse(R"({"alice/p":{"createTime":"t1","readyTime":"t2"}})"));
  EXPECT_EQ(split->others, 3u);
  EXPECT_EQ(split->othersReady, 1u); // bob/q: null is not ready, carol/r has none
  // A key with an escape is decoded; "" takes every entry as its own; null is empty.
  auto escaped = splitEntries(R"({"alice\/e":{"a":1}})", "alice/");
  ASSERT_TRUE(escaped);
  EXPECT_TRUE(escaped->own.contains("alice/e"));
  auto all = splitEntries(R"({"a/x":{},"b/y":{"readyTime":"t"}})", "");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->own.size(), 2u);
  EXPECT_EQ(all->others, 0u);
  auto none = splitEntries("null", "alice/");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->own.empty());
  // What the scanner cannot walk is refused, for the caller's full parser.
  for (const char* bad : {R"({"a/x":1})", R"({"a/x":{})", R"({"a/x" {}})", R"(["a/x"])",
                          R"({"alice/x":{"a":}})", R"({"a/x":{}} x)", R"({"a/x":"})", ""})
    EXPECT_FALSE(splitEntries(bad, "alice/")) << bad;
  // Counting parses nothing, and refuses what is not an object of objects.
  EXPECT_EQ(countEntries(R"( {"a/x":{"s":"}{"},"b\/y" : {}} )"), 2u);
  EXPECT_EQ(countEntries("null"), 0u);
  EXPECT_EQ(countEntries("{}"), 0u);
  for (const char* bad : {R"({"a/x":1})", R"({"a/x":{})", R"(["a/x"])", R"({"a/x":{}} x)", ""})
    EXPECT_FALSE(countEntries(bad)) << bad;

  auto spans = arrayElements(R"([ "Running", null , {"a":[1,2]}, 12.5e3, true ])");
  ASSERT_TRUE(spans);
  EXPECT_EQ(*spans, (std::vector<std::string_view>{R"("Running")", "null", R"({"a":[1,2]})",
                                                   "12.5e3", "true"}));
  EXPECT_TRUE(arrayElements("[]") && arrayElements("[]")->empty());
  for (const char* bad : {"", "[", "[1,", "[1 2]", "{}", R"(["a)", "[1]]"})
    EXPECT_FALSE(arrayElements(bad)) << bad;
}

TEST(StatusEntriesTest, EntriesWhereParsesOnlyTheKeptEntries) {
  std::vector<std::string> seen;
  auto keepNotBob = [&seen](std::string_view key) {
    seen.emplace_back(key);
    return key.substr(0, 4) != "bob/";
  };
  // bob's entry is not parsed: text the full parser refuses inside it does not matter.
  auto kept = entriesWhere(R"( {"alice/p":{"createTime":"t1"}, "bob/p":{"x":[1,{"y":"}]\"{"}]},
      "carol\/q" : {"readyTime":"t3"}} )",
                           keepNotBob);
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, json::parse(R"({"alice/p":{"createTime":"t1"},"carol/q":{"readyTime":"t3"}})"));
  EXPECT_EQ(seen, (std::vector<std::string>{"alice/p", "bob/p", "carol/q"})) << "every key seen";
  // null is an empty map; text the scanner cannot walk, or a kept entry that is not an object,
  // is refused for the caller's full parser.
  auto none = entriesWhere(" null ", keepNotBob);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  for (const char* bad :
       {R"({"a/x":1})", R"({"a/x":{})", R"(["a/x"])", R"({"a/x":{}} x)", "", R"({"a/x":{"a":}})"})
    EXPECT_FALSE(entriesWhere(bad, keepNotBob)) << bad;
  EXPECT_TRUE(entriesWhere(R"({"bob/x":1})", keepNotBob)) << "a skipped entry is not read";
  // otherEntries is the entries not of the own prefix.
  EXPECT_EQ(otherEntries(R"({"alice/p":{"a":1},"bob/p":{"b":2}})", "alice/"),
            json::parse(R"({"bob/p":{"b":2}})"));
}

TEST(StatusEntriesTest, AStringValueIsItsTextOrWhatTheParserReads) {
  EXPECT_EQ(stringValue(R"("Running")"), "Running");
  EXPECT_EQ(stringValue(R"("")"), "");
  EXPECT_EQ(stringValue(R"("a\"b\u00e9")"), "a\"b\u00e9");
  for (const char* other : {"null", "12", "{}", R"("\")", R"(")"})
    EXPECT_FALSE(stringValue(other)) << other;
}

TEST(StatusEntriesTest, LeadingStringsReadAsTheFullParserDoes) {
  // The first n elements as the parsed array has them: strings decoded, anything else "".
  auto expected = [](const std::string& text, std::size_t n) {
    std::vector<std::string> out(n);
    json a = json::parse(text);
    for (std::size_t k = 0; k < n && k < a.size(); ++k)
      if (a[k].is_string()) out[k] = a[k].get<std::string>();
    return out;
  };
  for (const char* text :
       {R"(["Running", "2024-05-20T08:00:00Z", {"alice/p": {"a": "]"}}, null])",
        R"([ "a\"b\u00e9" , 12 ,"\\", [1, ["x"]], true])", R"([null, {"k": "v"}, "third"])",
        R"(["only"])", R"([])", R"([{}, [], "x\\\"y"])"})
    for (std::size_t n = 0; n <= 6; ++n)
      EXPECT_EQ(leadingStrings(text, n), expected(text, n)) << text << " n=" << n;
  // Text that is not a fields array: what was read before the fault, then "".
  EXPECT_EQ(leadingStrings(R"({"a": "b"})", 2), std::vector<std::string>(2));
  EXPECT_EQ(leadingStrings(R"(["a", "b)", 2), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(leadingStrings(R"(["a" "b"])", 2), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(leadingStrings("", 1), std::vector<std::string>(1));
}

TEST(StatusEntriesTest, TaskFieldsThatAreNotWhatTheyShouldBeAreRefused) {
  EXPECT_TRUE(splitTaskFields(R"(["a", {}, null])", 1, "alice/"));
  for (const char* bad :
       {R"(["a", {}])", R"(["a", {}, {}, {}])", R"(["a", {}, 1])", R"(["a" {}, {}])",
        R"(["a", {}, {}] x)", R"({"a": 1})", R"(["a", {"alice/p": 1}, {}])", ""})
    EXPECT_FALSE(splitTaskFields(bad, 1, "alice/")) << bad;
}

TEST(StatusEntriesTest, TheScannerFindsAQuoteOrEscapeAtAnyOffset) {
  // The scanner looks at sixteen bytes at a time, then eight, then one: an escaped quote, an
  // escaped backslash and the closing quote at every offset of those blocks and across them, and
  // a text that ends in a string.
  for (std::size_t before = 0; before < 20; ++before)
    for (std::size_t after = 0; after < 20; after += 3)
      for (const char* escape : {"\\\"", "\\\\", "\\u0022"}) {
        const std::string text =
            "\"" + std::string(before, 'x') + escape + std::string(after, 'y') + "\"";
        const std::string array = "[" + text + ",{\"k\":" + text + "}]"; // the spans' text
        auto spans = arrayElements(array);
        ASSERT_TRUE(spans) << text;
        ASSERT_EQ(spans->size(), 2u) << text;
        EXPECT_EQ((*spans)[0], text);
        EXPECT_EQ(stringValue((*spans)[0]), json::parse(text).get<std::string>());
        EXPECT_FALSE(arrayElements("[" + text.substr(0, text.size() - 1))) << text;
        EXPECT_FALSE(arrayElements("[" + text.substr(0, text.size() - 1) + "\\")) << text;
      }
}

TEST(StatusEntriesTest, TheScannerSplitsAsTheFullParserDoes) {
  // Random maps of entries, serialised with and without spaces: the scanner's split equals the
  // split of the parsed map.
  std::mt19937 rng(7);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> parties = {"alice", "bob", "alice-2", "al"};
  const std::vector<std::string> values = {"2024-05-20T08:00:00Z",
                                           "",
                                           "a\"b",
                                           "}{][",
                                           "\\",
                                           "2024-05-20T10:00:01.5+02:00",
                                           "a message of some words, \"quoted\" \\ and \\\"",
                                           "\\\\\\\\\"\"\"\"more than eight escapes in a row\\"};
  for (int round = 0; round < 500; ++round) {
    json map = json::object();
    for (int n = pick(8); n > 0; --n) {
      json entry = json::object();
      for (const char* field : {"createTime", "readyTime", "podName", "reasons"}) {
        int kind = pick(4);
        if (kind == 0) continue;
        if (kind == 1)
          entry[field] = nullptr;
        else if (kind == 2)
          entry[field] = values[static_cast<std::size_t>(pick(static_cast<int>(values.size())))];
        else
          entry[field] = {{"nested",
                           {values[static_cast<std::size_t>(pick(static_cast<int>(values.size())))],
                            1, false}}};
      }
      map[parties[static_cast<std::size_t>(pick(4))] + "/obj-" + std::to_string(pick(50))] = entry;
    }
    PartyEntries parsed = splitParsedEntries(map, "alice/");
    for (int indent : {-1, 2}) {
      auto scanned = splitEntries(map.dump(indent), "alice/");
      ASSERT_TRUE(scanned) << map.dump();
      EXPECT_EQ(scanned->own, parsed.own);
      EXPECT_EQ(scanned->others, parsed.others);
      EXPECT_EQ(scanned->othersReady, parsed.othersReady);
      EXPECT_EQ(countEntries(map.dump(indent)), map.size());
      // In a task's fields, after the leading ones, with a second map: one walk splits both as
      // splitEntries splits each.
      json other = json::object();
      if (round % 3 == 0) other = nullptr;
      if (round % 3 == 1) other = {{"bob/x", {{"readyTime", "t"}}}, {"alice/y", json::object()}};
      json fields = json::array({"Running", nullptr, "2024-05-20T08:00:00Z", map, other});
      const std::string fieldsText = fields.dump(indent); // the spans point into it
      auto split = splitTaskFields(fieldsText, 3, "alice/");
      ASSERT_TRUE(split) << fieldsText;
      ASSERT_EQ(split->leading.size(), 3u);
      EXPECT_EQ(split->leading[0], "\"Running\"");
      EXPECT_EQ(split->leading[1], "null");
      EXPECT_EQ(split->pods.own, parsed.own);
      EXPECT_EQ(split->pods.others, parsed.others);
      EXPECT_EQ(split->pods.othersReady, parsed.othersReady);
      if (indent < 0) { // indented, the map's text is indented deeper inside the array
        EXPECT_EQ(split->pods.ownDigest, splitEntries(map.dump(), "alice/")->ownDigest);
      }
      PartyEntries second = splitParsedEntries(other, "alice/");
      EXPECT_EQ(split->services.own, second.own);
      EXPECT_EQ(split->services.others, second.others);
      EXPECT_EQ(split->services.othersReady, second.othersReady);
    }
    // The other parties' entries, parsed, are the map without the own ones.
    json others = map;
    for (const auto& [key, entry] : parsed.own.items())
      others.erase(key);
    EXPECT_EQ(otherEntries(map.dump(2), "alice/"), others);
    // Read as the summary reads them, unparsed: the times and reasons the parsed entries give.
    auto render = [](const model::timeline::EntryTimes& e) {
      json j = {{"key", e.key}, {"pod", e.pod}};
      for (auto [field, member] : model::timeline::EntryTimes::fields())
        if (e.*member) j[std::string(field)] = *(e.*member);
      for (const auto& [phase, r] : e.reasons)
        j["reasons"][phase] = {r.first, r.second};
      return j;
    };
    json expected = json::array();
    for (const auto& [key, entry] : others.items()) {
      model::timeline::EntryTimes e;
      e.key = key;
      e.pod = true;
      e.readTimes(entry);
      if (entry.contains("reasons")) e.readReasons(entry["reasons"]);
      expected.push_back(render(e));
    }
    for (int indent : {-1, 2}) {
      const std::string text = map.dump(indent); // the split's views point into it
      auto split = splitEntries(text, "alice/");
      ASSERT_TRUE(split) << text;
      auto times = entryTimesOf(split->otherTexts, true);
      ASSERT_TRUE(times) << text;
      json got = json::array();
      for (const auto& e : *times)
        got.push_back(render(e));
      EXPECT_EQ(got, expected) << map.dump(indent);
    }
  }
}

// The digest of own entries says whether they changed: that of the own entries only, in any
// order, and of held texts (OwnEntryTexts) as of the split they came from; an own entry that
// changed, went or is spaced differently digests otherwise (and is read again).
TEST(StatusEntriesTest, TheOwnEntriesDigestSaysWhetherTheyChanged) {
  const std::string first =
      R"({"alice/p":{"createTime":"t1"},"alice/q":{"readyTime":"t2"},"bob/p":{}})";
  auto a = splitEntries(first, "alice/", true);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->own.empty()); // as texts: nothing parsed
  ASSERT_EQ(a->ownTexts.size(), 2u);
  EXPECT_NE(a->ownDigest, 0u);
  auto held = OwnEntryTexts::fromTexts(a->ownTexts);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->digest(), a->ownDigest);
  EXPECT_EQ(held->toJson(), splitEntries(first, "alice/")->own);
  EXPECT_EQ(OwnEntryTexts::fromJson(held->toJson()).digest(), a->ownDigest);
  // Another party wrote; the own entries come in another order: the same digest.
  auto b = splitEntries(
      R"({"bob/p":{"readyTime":"t9"},"alice/q":{"readyTime":"t2"},"alice/p":{"createTime":"t1"}})",
      "alice/", true);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ownDigest, a->ownDigest);
  EXPECT_EQ(b->othersReady, 1u);
  // An own entry changed, or one went, or its text is spaced: another.
  for (const char* changed : {R"({"alice/p":{"createTime":"t0"},"alice/q":{"readyTime":"t2"}})",
                              R"({"alice/p":{"createTime":"t1"}})",
                              R"({"alice/p":{"createTime": "t1"},"alice/q":{"readyTime":"t2"}})"}) {
    auto c = splitEntries(changed, "alice/", true);
    ASSERT_TRUE(c) << changed;
    EXPECT_NE(c->ownDigest, a->ownDigest) << changed;
    EXPECT_EQ(OwnEntryTexts::fromTexts(c->ownTexts)->toJson(), json::parse(changed)) << changed;
  }
  // No own entries: the digest of none, not 0 ("not known").
  auto d = splitEntries(R"({"bob/p":{}})", "alice/", true);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->ownTexts.empty());
  EXPECT_EQ(d->ownDigest, noEntriesDigest());
  EXPECT_EQ(d->ownDigest, OwnEntryTexts().digest());
}

// Own entries held as texts (own_entries.h): a write merged into an entry's text is the text the
// API server writes of the merged entry (compact, members by name), so its digest is that of the
// write's event; and what is read off the texts is what the parsed entries say.
TEST(OwnEntryTextsTest, AWriteMergedIntoTheTextsIsTheServersTextOfTheMergedEntries) {
  std::mt19937 rng(11);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> keys = {"alice/p-0", "alice/p-1", "alice/s-0", "alice/x"};
  const std::vector<json> values = {"2024-05-20T08:00:00Z",
                                    "2024-05-20T10:00:01.5+02:00",
                                    "not a time",
                                    nullptr,
                                    7,
                                    {{"nested", {"a\"b", 1}}},
                                    "Running",
                                    "<&>"};
  const std::vector<std::string> names = {"createTime",   "readyTime", "startTime",
                                          "scheduleTime", "podName",   "namespace",
                                          "podPhase",     "reason",    "zeta"};
  const std::vector<int64_t> instants = {1716192000000000000, 1716192001500000000,
                                         1716199201123456789};
  for (int round = 0; round < 400; ++round) {
    // The entries as the server holds them, and their compact text (keys sorted, as it writes).
    json held = json::object();
    for (int n = pick(4); n > 0; --n) {
      json entry = json::object();
      for (int m = pick(6); m > 0; --m)
        entry[names[static_cast<std::size_t>(pick(static_cast<int>(names.size())))]] =
            values[static_cast<std::size_t>(pick(static_cast<int>(values.size())))];
      held[keys[static_cast<std::size_t>(pick(static_cast<int>(keys.size())))]] = entry;
    }
    const std::string heldText = held.dump();
    auto split = splitEntries(heldText, "alice/", true);
    ASSERT_TRUE(split) << heldText;
    EXPECT_TRUE(split->own.empty()); // texts only: nothing parsed
    auto texts = OwnEntryTexts::fromTexts(split->ownTexts);
    ASSERT_TRUE(texts) << heldText;
    EXPECT_EQ(texts->digest(), split->ownDigest) << heldText;
    EXPECT_EQ(texts->toJson(), held) << heldText;
    EXPECT_EQ(OwnEntryTexts::fromJson(held).digest(), split->ownDigest) << heldText;
    for (const auto& [key, entry] : held.items())
      for (TimeField f :
           {TimeField::kCreate, TimeField::kSchedule, TimeField::kStart, TimeField::kReady}) {
        const EntryClock parsed(&entry);
        EXPECT_EQ(texts->clockOf(key).has(f), parsed.has(f)) << entry.dump();
        EXPECT_EQ(texts->clockOf(key).time(f), parsed.time(f)) << entry.dump();
      }
    EXPECT_FALSE(texts->clockOf("alice/none").present());
    // A write: fields set or cleared, new entries identified.
    StatusPatch patch;
    for (int n = pick(3) + 1; n > 0; --n) {
      StatusPatch::Entry e{StatusPatch::kPods,
                           keys[static_cast<std::size_t>(pick(static_cast<int>(keys.size())))]};
      e.identify = pick(3) == 0;
      if (pick(2) == 0) e.podPhase = "Running";
      for (TimeField f : {TimeField::kCreate, TimeField::kStart, TimeField::kReady})
        if (pick(2) == 0)
          e.set(f,
                pick(4) == 0 ? StatusPatch::kClear : instants[static_cast<std::size_t>(pick(3))]);
      patch.add(std::move(e));
    }
    json merged = held;
    patch.applyTo(StatusPatch::kPods, merged);
    texts->apply(patch, StatusPatch::kPods);
    texts->apply(patch, StatusPatch::kServices); // none of the services': nothing
    EXPECT_EQ(texts->toJson(), merged) << heldText << " + " << patch.toJson().dump();
    for (const auto& e : texts->entries()) {
      EXPECT_EQ(e.text, merged[e.key].dump()) << heldText << " + " << patch.toJson().dump();
      // The times after the merge, kept without reading the text again, are the parse's.
      const EntryClock parsed(&merged[e.key]);
      for (TimeField f :
           {TimeField::kCreate, TimeField::kSchedule, TimeField::kStart, TimeField::kReady}) {
        EXPECT_EQ(e.clock.has(f), parsed.has(f)) << merged[e.key].dump();
        EXPECT_EQ(e.clock.time(f), parsed.time(f)) << merged[e.key].dump();
      }
    }
    // The write's event carries the merged entries as the server writes them: same digest.
    EXPECT_EQ(texts->digest(), splitEntries(merged.dump(), "alice/")->ownDigest)
        << heldText << " + " << patch.toJson().dump();
  }
}

TEST(OwnEntryTextsTest, EntriesAreFoundByKeyInAnyOrderTheyCameIn) {
  // A writer that does not sort the map, and many entries of one party: each found by its key.
  std::string text = "{";
  for (int i = 29; i >= 0; --i)
    text += (i == 29 ? "" : ",") + std::string("\"alice/p-") + std::to_string(i) +
            "\":{\"readyTime\":\"2024-05-20T08:00:" + (i < 10 ? "0" : "") + std::to_string(i) +
            "Z\"}";
  text += ",\"bob/p\":{}}";
  auto split = splitEntries(text, "alice/", true);
  ASSERT_TRUE(split);
  auto texts = OwnEntryTexts::fromTexts(split->ownTexts);
  ASSERT_TRUE(texts);
  ASSERT_EQ(texts->size(), 30u);
  EXPECT_TRUE(std::is_sorted(texts->entries().begin(), texts->entries().end(),
                             [](const auto& a, const auto& b) { return a.key < b.key; }));
  EXPECT_EQ(texts->digest(), split->ownDigest);
  for (int i = 0; i < 30; ++i) {
    const std::string key = "alice/p-" + std::to_string(i);
    ASSERT_NE(texts->find(key), nullptr) << key;
    EXPECT_EQ(texts->clockOf(key).time(TimeField::kReady), 1716192000000000000 + i * kSecond)
        << key;
  }
  EXPECT_EQ(texts->find("alice/p-30"), nullptr);
  EXPECT_EQ(texts->find("bob/p"), nullptr);
}

TEST(OwnEntryTextsTest, TextTheScannerDoesNotReadAsTheParserIsMergedThroughItsParse) {
  // An escaped member name, a field given twice: the parser's reading decides.
  StatusPatch::Entry e{StatusPatch::kPods, "alice/p"};
  e.set(TimeField::kReady, 1716192000000000000);
  for (const char* text :
       {R"({"create\u0054ime":"x","readyTime":"y"})", R"({"readyTime":"a","readyTime":"b"})"}) {
    EXPECT_FALSE(mergedEntryText(text, e)) << text;
    EXPECT_FALSE(entryClockOfText(text)) << text;
    OwnEntryTexts texts;
    texts.put("alice/p", text);
    const json parsed = json::parse(text);
    EXPECT_EQ(texts.clockOf("alice/p").time(TimeField::kReady),
              EntryClock(&parsed).time(TimeField::kReady))
        << text;
    StatusPatch patch;
    patch.add(e);
    json merged = {{"alice/p", parsed}};
    patch.applyTo(StatusPatch::kPods, merged);
    texts.apply(patch, StatusPatch::kPods);
    EXPECT_EQ(texts.toJson(), merged) << text;
    EXPECT_EQ(texts.clockOf("alice/p").time(TimeField::kReady), 1716192000000000000) << text;
  }
}

} // namespace
} // namespace kuscia_host::model
