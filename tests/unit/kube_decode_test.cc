// The watch hot path: frame splitting over arbitrary chunk boundaries, projection of declared
// JSON pointers with simdjson, and the compact cache records.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "kube/digest_table.h"
#include "kube/frame_splitter.h"
#include "kube/kube_client.h"
#include "kube/object_cache.h"
#include "kube/projection.h"
#include "kube/record_codec.h"

namespace kuscia_host::kube {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(KH_SOURCE_DIR) + "/tests/fixtures/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str()).dump();
}

constexpr std::size_t kMaxFrame = std::size_t{64} << 20;

// Whether a frame is exactly one JSON object, as the decoder requires of a guessed line.
bool oneObject(std::string_view f) {
  return !f.empty() && f.front() == '{' && nlohmann::json::accept(f);
}

// The frames a caller accepts: a guessed line that is not one object is rejected, as the
// informer does when the decoder refuses it.
std::vector<std::string> splitAll(FrameSplitter& s, const std::string& stream,
                                  const std::vector<std::size_t>& cuts) {
  std::vector<std::string> frames;
  std::size_t pos = 0;
  auto drain = [&] {
    std::string_view f;
    while (s.next(f) == FrameSplitter::Status::kFrame) {
      if (s.guessed() && !oneObject(f)) {
        s.reject();
        continue;
      }
      frames.emplace_back(f);
    }
  };
  for (std::size_t c : cuts) {
    s.feed(std::string_view(stream).substr(pos, c - pos));
    pos = c;
    drain();
  }
  s.feed(std::string_view(stream).substr(pos));
  drain();
  return frames;
}

// The stream fed in pieces of each size, split by brackets and by lines: always `want`.
void expectFramesInEveryMode(const std::string& stream, const std::vector<std::string>& want,
                             std::initializer_list<std::size_t> cutSizes) {
  for (std::size_t cut : cutSizes) {
    std::vector<std::size_t> cuts;
    for (std::size_t pos = cut; pos < stream.size(); pos += cut)
      cuts.push_back(pos);
    for (bool lines : {false, true}) {
      FrameSplitter s(kMaxFrame, lines);
      EXPECT_EQ(splitAll(s, stream, cuts), want) << "cut every " << cut << " lines " << lines;
    }
  }
}

TEST(FrameSplitterTest, SplitsOnJsonBoundariesWhateverTheChunking) {
  std::string pod = fixture("pod.json");
  std::vector<std::string> events = {
      R"({"type":"ADDED","object":)" + pod + "}",
      R"({"type":"MODIFIED","object":{"metadata":{"name":"a \"}{\\","resourceVersion":"2"}}})",
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"3"}}})"};
  std::string stream;
  for (const auto& e : events)
    stream += e + "\n";
  // One byte at a time, everything at once, and random cuts.
  std::vector<std::size_t> everyByte;
  for (std::size_t i = 1; i < stream.size(); ++i)
    everyByte.push_back(i);
  for (bool lines : {true, false})
    for (const auto& cuts : {everyByte, std::vector<std::size_t>{}}) {
      FrameSplitter s(kMaxFrame, lines);
      EXPECT_EQ(splitAll(s, stream, cuts), events) << (lines ? "lines" : "brackets");
    }
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::size_t> cuts;
    std::size_t pos = 0;
    while (true) {
      pos += 1 + rng() % 700;
      if (pos >= stream.size()) break;
      cuts.push_back(pos);
    }
    for (bool lines : {true, false}) {
      FrameSplitter s(kMaxFrame, lines);
      EXPECT_EQ(splitAll(s, stream, cuts), events) << "round " << round << " lines " << lines;
    }
  }
}

// Long frames go through the 64-bytes-at-a-time scan: quotes escaped by runs of backslashes, and
// brackets inside strings, wherever they fall against its 64-byte blocks and the feeds' cuts.
TEST(FrameSplitterTest, EscapesAndBracketsInLongStringsAtEveryBlockOffset) {
  std::mt19937 rng(11);
  const std::string alphabet = R"(ab{}[]"\ :,x)";
  std::vector<std::string> events;
  for (int e = 0; e < 60; ++e) {
    nlohmann::json object = nlohmann::json::object();
    for (int k = 0; k < 6; ++k) {
      std::string text(static_cast<std::size_t>(e + k * 37) % 200, 'p');
      for (auto& c : text)
        if (rng() % 3 == 0) c = alphabet[rng() % alphabet.size()];
      // Appended, not "k" + ...: GCC 12 warns falsely (-Wrestrict) on a literal plus a temporary.
      std::string key = "k";
      key += std::to_string(k);
      key += alphabet[rng() % alphabet.size()];
      object[key] =
          k % 2 == 0 ? nlohmann::json(text) : nlohmann::json::array({text, {{"n", text}}});
    }
    events.push_back(nlohmann::json{{"type", "MODIFIED"}, {"object", object}}.dump());
  }
  std::string stream;
  for (const auto& e : events)
    stream += e + "\n";
  // The bracket scan is what this test is about; lines must agree with it.
  expectFramesInEveryMode(stream, events, {1, 3, 16, 63, 64, 65, 100, 4096});
}

// Lines first: a whole line is offered without a bracket scan; what is not one object per line
// (two on a line, a pretty-printed event, a line cut in a string) is rejected and split by its
// brackets, giving the frames the bracket scan gives, whatever the chunking.
TEST(FrameSplitterTest, LinesAreGuessedAndRejectedLinesSplitByBrackets) {
  FrameSplitter s;
  s.feed("{\"a\":1}\r\n");
  std::string_view f;
  ASSERT_EQ(s.next(f), FrameSplitter::Status::kFrame);
  EXPECT_TRUE(s.guessed());
  EXPECT_EQ(f, "{\"a\":1}"); // without the line's end
  EXPECT_EQ(s.next(f), FrameSplitter::Status::kNeedMore);

  s.feed("{\"b\":2} {\"c\":\"\\\"}\"}\n");
  ASSERT_EQ(s.next(f), FrameSplitter::Status::kFrame);
  EXPECT_TRUE(s.guessed());
  EXPECT_EQ(f, R"({"b":2} {"c":"\"}"})");
  s.reject();
  ASSERT_EQ(s.next(f), FrameSplitter::Status::kFrame);
  EXPECT_FALSE(s.guessed());
  EXPECT_EQ(f, R"({"b":2})");
  ASSERT_EQ(s.next(f), FrameSplitter::Status::kFrame); // the rest of the line is a line again
  EXPECT_TRUE(s.guessed());
  EXPECT_EQ(f, R"({"c":"\"}"})");

  // Begun without its newline: the part that came is scanned, the line taken when it ends.
  s.feed("{\"d\":[1,");
  EXPECT_EQ(s.next(f), FrameSplitter::Status::kNeedMore);
  s.feed("2]}\n");
  ASSERT_EQ(s.next(f), FrameSplitter::Status::kFrame);
  EXPECT_TRUE(s.guessed());
  EXPECT_EQ(f, R"({"d":[1,2]})");

  std::string pod = fixture("pod.json");
  std::vector<std::string> events = {
      R"({"type":"ADDED","object":)" + pod + "}",
      R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"2"}}})",
      R"({"type":"MODIFIED","object":{"metadata":{"name":"b","resourceVersion":"3"}}})",
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"4"}}})"};
  // Pretty-printed, two on a line, compact: the same frames by brackets and by lines.
  std::string stream = nlohmann::json::parse(events[0]).dump(2) + "\n" + events[1] + events[2] +
                       "\n" + events[3] + "\n";
  std::vector<std::string> want = {nlohmann::json::parse(events[0]).dump(2), events[1], events[2],
                                   events[3]};
  expectFramesInEveryMode(stream, want, {1, 7, 64, 1000, 100000});
}

TEST(FrameSplitterTest, SeveralEventsInOneChunkWithoutNewlines) {
  FrameSplitter s;
  s.feed(R"({"a":1}{"b":[1,{"c":"}"}]} {"d":2})");
  std::string_view f;
  std::vector<std::string> got;
  while (s.next(f) == FrameSplitter::Status::kFrame)
    got.emplace_back(f);
  EXPECT_EQ(got, (std::vector<std::string>{R"({"a":1})", R"({"b":[1,{"c":"}"}]})", R"({"d":2})"}));
}

TEST(FrameSplitterTest, GarbageBetweenEventsIsAnError) {
  FrameSplitter s;
  s.feed("{\"a\":1}\nnot json\n");
  std::string_view f;
  EXPECT_EQ(s.next(f), FrameSplitter::Status::kFrame);
  EXPECT_EQ(s.next(f), FrameSplitter::Status::kError);
  EXPECT_NE(s.error().find("expected '{'"), std::string::npos);
  s.reset();
  s.feed("{}");
  EXPECT_EQ(s.next(f), FrameSplitter::Status::kFrame);
}

TEST(FrameSplitterTest, OversizedFrameIsAnError) {
  FrameSplitter s(1024);
  s.feed(R"({"a":")" + std::string(2048, 'x'));
  std::string_view f;
  EXPECT_EQ(s.next(f), FrameSplitter::Status::kError);
}

struct Decoded {
  FieldPaths paths;
  std::vector<std::size_t> slots;
};

TEST(ProjectionTest, ExtractsDeclaredPointersAndMetadataFromAnEvent) {
  FieldPaths paths;
  auto a = paths.add("/metadata/creationTimestamp");
  auto b = paths.add("/status/phase");
  auto c = paths.add("/status/conditions/1/type");
  auto d = paths.add("/metadata/labels/kuscia.secretflow~1task-uid");
  auto e = paths.add("/spec/nope");
  auto f = paths.add("/status/podIPs");
  ASSERT_TRUE(a && b && c && d && e && f);
  EXPECT_EQ(*paths.add("/status/phase"), *b); // same pointer, same slot
  Decoder dec(paths, {});
  std::string pod = fixture("pod.json");
  auto podJson = nlohmann::json::parse(pod);
  std::string event = R"({"type":"MODIFIED","object":)" + pod + "}";
  Projected out;
  auto type = dec.decodeEvent(event, event.size(), out); // no padding: the decoder copies
  ASSERT_TRUE(type) << type.error();
  EXPECT_EQ(*type, WatchEventType::kModified);
  EXPECT_EQ(out.name, "secretflow-task-psi-0");
  EXPECT_EQ(out.namespaceName, "alice");
  EXPECT_EQ(out.key(), "alice/secretflow-task-psi-0");
  EXPECT_EQ(out.uid, podJson["metadata"]["uid"]);
  EXPECT_EQ(out.resourceVersion, "48190");
  EXPECT_FALSE(out.hasLabels); // nobody asked for them
  EXPECT_EQ(out.values[*a], "\"2024-05-20T08:00:00Z\"");
  EXPECT_EQ(out.values[*b], podJson["status"]["phase"].dump());
  EXPECT_EQ(out.values[*c], podJson["status"]["conditions"][1]["type"].dump());
  EXPECT_EQ(out.values[*d], "\"7c0f2d6e-3b1a-4f5e-9a41-2f6d8e0b9c11\"");
  EXPECT_EQ(out.values[*e], "");
  EXPECT_EQ(nlohmann::json::parse(out.values[*f]), podJson["status"]["podIPs"]);
  EXPECT_EQ(out.values[*f].find(' '), std::string::npos); // minified
}

TEST(ProjectionTest, NestedPointersAndLabelsWhenKept) {
  FieldPaths paths;
  auto status = paths.add("/status");
  auto phase = paths.add("/status/phase");
  auto labels = paths.add("/metadata/labels");
  ASSERT_TRUE(status && phase && labels);
  Decoder dec(paths, {true, true});
  std::string obj =
      R"({"metadata":{"name":"n","namespace":"ns","resourceVersion":"7",)"
      R"("labels":{"app":"x","a/b":"y \"q\""}},"status":{"phase":"Running","n":[1, 2]}})";
  std::string event = R"({"object":)" + obj + R"(,"type":"ADDED"})"; // object before type
  Projected out;
  auto type = dec.decodeEvent(event, event.size(), out);
  ASSERT_TRUE(type) << type.error();
  EXPECT_EQ(*type, WatchEventType::kAdded);
  EXPECT_EQ(out.values[*status], R"({"phase":"Running","n":[1,2]})");
  EXPECT_EQ(out.values[*phase], "\"Running\"");
  ASSERT_TRUE(out.hasLabels);
  ASSERT_EQ(out.labels.size(), 2u);
  EXPECT_EQ(out.labels[1].first, "a/b");
  EXPECT_EQ(out.labels[1].second, "y \"q\"");
  EXPECT_EQ(nlohmann::json::parse(out.values[*labels]),
            nlohmann::json({{"app", "x"}, {"a/b", "y \"q\""}}));
  EXPECT_EQ(out.raw, obj);
}

// A field of the whole metadata: the object keeps its name, namespace, uid, resourceVersion and
// labels (a subscriber asking for it must not make the informer skip every object).
TEST(ProjectionTest, AFieldOfTheWholeMetadataKeepsTheObjectsIdentity) {
  FieldPaths paths;
  auto meta = paths.add("/metadata");
  auto created = paths.add("/metadata/creationTimestamp");
  ASSERT_TRUE(meta && created);
  Decoder dec(paths, {true, false});
  std::string event =
      R"({"type":"ADDED","object":{"metadata":{"name":"j","namespace":"ns","uid":"u",)"
      R"("resourceVersion":"7","creationTimestamp":"2024-05-20T09:00:00Z","labels":{"a":"b"}}}})";
  Projected out;
  auto type = dec.decodeEvent(event, event.size(), out);
  ASSERT_TRUE(type) << type.error();
  EXPECT_EQ(out.name, "j");
  EXPECT_EQ(out.namespaceName, "ns");
  EXPECT_EQ(out.uid, "u");
  EXPECT_EQ(out.resourceVersion, "7");
  EXPECT_EQ(out.values[*created], "\"2024-05-20T09:00:00Z\"");
  EXPECT_EQ(nlohmann::json::parse(out.values[*meta])["name"], "j");
  ASSERT_EQ(out.labels.size(), 1u);
  EXPECT_EQ(out.labels[0].second, "b");
}

TEST(ProjectionTest, ErrorsNameTheProblem) {
  FieldPaths paths;
  EXPECT_FALSE(paths.add(""));
  EXPECT_FALSE(paths.add("status"));
  EXPECT_FALSE(paths.add("/a~2"));
  Decoder dec(paths, {});
  Projected out;
  auto check = [&](const std::string& ev, const std::string& want) {
    auto r = dec.decodeEvent(ev, ev.size(), out);
    ASSERT_FALSE(r) << ev;
    EXPECT_NE(r.error().find(want), std::string::npos) << r.error();
  };
  check(R"({"type":"ADDED","object":{"metadata":{"name":"a")", "ended early");
  check(R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"}}})", "metadata.name");
  check(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})", "resourceVersion");
  check(R"({"type":"ADDED","object":{"metadata":{"name":5,"resourceVersion":"1"}}})",
        "metadata.name is not a string");
  check(R"({"object":{}})", "no type");
  check(R"({"type":"ADDED"})", "no object");
  check(R"([1,2])", "not a JSON object");
  // One object per frame: a guessed line holding two is refused, then split by its brackets.
  check(R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}} {"x":1})",
        "data after the event's object");
  // (simdjson checks a root object's last token first.)
  check(R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}} "x")",
        "not a JSON object");
  // ERROR events carry a Status.
  std::string err = R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired",)"
                    R"("message":"too old resource version"}})";
  auto r = dec.decodeEvent(err, err.size(), out);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, WatchEventType::kError);
  EXPECT_EQ(out.code, 410);
  EXPECT_EQ(out.reason, "Expired");
}

TEST(ProjectionTest, ListPagesStreamItemsAndSkipBadOnes) {
  FieldPaths paths;
  auto phase = paths.add("/status/phase");
  ASSERT_TRUE(phase);
  Decoder dec(paths, {});
  std::string body =
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"99","continue":"abc"},"items":[)"
      R"({"metadata":{"name":"a","namespace":"n","resourceVersion":"5"},"status":{"phase":"Running"}},)"
      R"({"metadata":{"namespace":"n","resourceVersion":"6"}},)"
      R"({"metadata":{"name":"c","namespace":"n","resourceVersion":"7","labels":{"x":1}}},)"
      R"({"metadata":{"name":"d","namespace":"n","resourceVersion":"8"}}]})";
  std::vector<std::string> keys, phases, bad;
  auto meta = dec.decodeList(
      body,
      [&](Projected& p) {
        keys.push_back(p.key());
        phases.push_back(p.values[*phase]);
      },
      [&](const std::string& why) { bad.push_back(why); });
  ASSERT_TRUE(meta) << meta.error();
  EXPECT_EQ(meta->resourceVersion, "99");
  EXPECT_EQ(meta->continueToken, "abc");
  EXPECT_EQ(keys, (std::vector<std::string>{"n/a", "n/d"}));
  EXPECT_EQ(phases, (std::vector<std::string>{"\"Running\"", ""}));
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_NE(bad[1].find("labels"), std::string::npos);
  EXPECT_FALSE(dec.decodeList(
      "{\"items\":[{]}", [](Projected&) {}, [](const std::string&) {}));
}

TEST(ProjectionTest, TheLastListPageLetsGoOfBuffersSizedToThePages) {
  FieldPaths paths;
  auto phase = paths.add("/status/phase");
  ASSERT_TRUE(phase);
  Decoder dec(paths, {});
  auto page = [](const std::string& continueToken, int items) {
    std::string body = R"({"kind":"PodList","metadata":{"resourceVersion":"99","continue":")" +
                       continueToken + R"("},"items":[)";
    for (int i = 0; i < items; ++i)
      body += std::string(i > 0 ? "," : "") + R"({"metadata":{"name":"p)" + std::to_string(i) +
              R"(","namespace":"n","resourceVersion":"5"},"status":{"phase":"Running"}})";
    return body + "]}";
  };
  std::size_t listed = 0;
  auto list = [&](const std::string& body) {
    return dec.decodeList(
        body, [&](Projected&) { ++listed; }, [](const std::string&) {});
  };
  const std::string big = page("more", 10000); // about 1 MB
  ASSERT_TRUE(list(big));
  EXPECT_GE(dec.bufferBytes(), big.size()); // kept for the next page
  ASSERT_TRUE(list(page("", 10)));
  EXPECT_LT(dec.bufferBytes(), std::size_t{512} * 1024)
      << "the last page keeps what the big one needed";
  EXPECT_EQ(listed, 10010u);
  // The next watch event parses as before.
  std::string ev = R"({"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"n",)"
                   R"("resourceVersion":"6"},"status":{"phase":"Failed"}}})";
  Projected out;
  auto r = dec.decodeEvent(ev, ev.size(), out);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(out.values[*phase], "\"Failed\"");
}

TEST(ObjectCacheTest, CompactRecordsAndReplacement) {
  Projected p;
  p.name = "pod-a";
  p.namespaceName = "alice";
  p.uid = "u1";
  p.resourceVersion = "10";
  p.hasLabels = true;
  p.labels = {{"app", "x"}, {"empty", ""}};
  p.values = {"\"Running\"", ""};
  RecordPtr r = RecordPtr::make(p, false);
  EXPECT_EQ(r->key(), "alice/pod-a");
  EXPECT_STREQ(r->key().data(), "alice/pod-a"); // NUL-terminated for the C ABI
  EXPECT_STREQ(r->resourceVersion().data(), "10");
  EXPECT_EQ(r->field(0), "\"Running\"");
  EXPECT_EQ(r->field(1), "");
  EXPECT_EQ(r->label("app"), std::optional<std::string_view>("x"));
  EXPECT_EQ(r->label("empty"), std::optional<std::string_view>(""));
  EXPECT_FALSE(r->label("nope"));
  EXPECT_LT(r->bytes(), 160u);

  ObjectCache cache;
  EXPECT_FALSE(cache.put(r));
  p.resourceVersion = "11";
  RecordPtr r2 = RecordPtr::make(p, false);
  EXPECT_TRUE(r->sameContent(*r2)); // only the resourceVersion moved
  p.values[0] = "\"Succeeded\"";
  RecordPtr r3 = RecordPtr::make(p, false);
  EXPECT_FALSE(r->sameContent(*r3));
  RecordPtr old = cache.put(r3);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->resourceVersion(), "10");
  r = RecordPtr();
  old = RecordPtr(); // the index key now views r3, not the freed record
  ASSERT_TRUE(cache.get("alice/pod-a"));
  EXPECT_EQ(cache.get("alice/pod-a")->field(0), "\"Succeeded\"");
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.recordBytes(), r3->bytes());
  EXPECT_TRUE(cache.erase("alice/pod-a"));
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.recordBytes(), 0u);
}

// A canonical uid is kept as 16 bytes and any other as it came; offsets are 16 bits wide until
// a record's data reaches 64 KiB. Every form reads back exactly, plain or packed.
TEST(ObjectCacheTest, UidsAndLongRecordsReadBackExactly) {
  Projected p;
  p.name = "pod-a";
  p.namespaceName = "alice";
  p.resourceVersion = "7";
  p.values = {"\"Running\""};
  p.uid = "0b6f7a9c-1d2e-4f5a-8b9c-0123456789ef";
  RecordPtr canonical = RecordPtr::make(p, false);
  EXPECT_EQ(canonical->uid(), p.uid);
  for (std::string other :
       {"0B6F7A9C-1D2E-4F5A-8B9C-0123456789EF", "u1", "", "0b6f7a9c-1d2e-4f5a-8b9c-0123456789e",
        "0b6f7a9c+1d2e-4f5a-8b9c-0123456789ef", "0b6f7a9c-1d2e-4f5a-8b9c-0123456789eg"}) {
    p.uid = other;
    RecordPtr r = RecordPtr::make(p, false);
    EXPECT_EQ(r->uid(), other);
    EXPECT_FALSE(r->sameContent(*canonical)) << other;
    EXPECT_EQ(r->field(0), "\"Running\"");
  }
  p.uid = "0b6f7a9c-1d2e-4f5a-8b9c-0123456789ef";
  Projected text = p;
  text.uid = "U" + p.uid.substr(1); // not canonical: kept as text, 20 bytes more
  EXPECT_EQ(canonical->bytes() + 20, RecordPtr::make(text, false)->bytes());
  // 70,000 bytes of a field: 32-bit offsets, every slot where it was.
  std::string big = "\"" + std::string(70000, 'x') + "\"";
  p.values = {"\"Running\"", big, "\"tail\""};
  RecordPtr wide = RecordPtr::make(p, false);
  EXPECT_EQ(wide->key(), "alice/pod-a");
  EXPECT_EQ(wide->uid(), p.uid);
  EXPECT_EQ(wide->resourceVersion(), "7");
  EXPECT_EQ(wide->field(0), "\"Running\"");
  EXPECT_EQ(wide->field(1), big);
  EXPECT_STREQ(wide->field(2).data(), "\"tail\"");
  EXPECT_GT(wide->bytes(), 70000u);
  const RecordCodec* codec = RecordCodec::make(big.substr(0, 4096));
  ASSERT_NE(codec, nullptr);
  RecordPtr packed = wide.packed(*codec, 64);
  ASSERT_TRUE(packed->packed());
  EXPECT_LT(packed->bytes(), 1000u);
  EXPECT_EQ(packed->uid(), p.uid);
  EXPECT_TRUE(packed->sameContent(*wide));
  PlainRecord view(*packed);
  EXPECT_EQ(view->field(1), big);
  EXPECT_EQ(view->field(2), "\"tail\"");
  EXPECT_EQ(packed->digest(), wide->digest());
}

// A record of a finished task as the informer keeps it: projected timing text, mostly alike from
// one task to the next.
Projected finishedTask(int i) {
  Projected p;
  p.name = "done-" + std::to_string(i);
  p.namespaceName = "cross-domain";
  p.uid = "0b6f7a9c-1d2e-4f5a-8b9c-" + std::to_string(100000000000 + i);
  p.resourceVersion = std::to_string(1000 + i);
  std::string pods = "{";
  for (const char* d : {"alice", "bob"})
    pods += std::string(pods.size() > 1 ? "," : "") + "\"" + d + "/" + p.name +
            "-0\":{\"createTime\":\"2026-11-01T08:00:0" + std::to_string(i % 10) +
            "Z\",\"startTime\":\"2026-11-01T08:00:02Z\",\"readyTime\":\"2026-11-01T08:00:09Z\"}";
  pods += "}";
  p.values = {pods, "", "\"Succeeded\""};
  return p;
}

TEST(ObjectCacheTest, PackedRecordsReadAndCompareAsPlainOnes) {
  std::string samples;
  for (int i = 0; i < 4; ++i)
    samples += RecordPtr::make(finishedTask(i), false)->field(0);
  const RecordCodec* codec = RecordCodec::make(samples);
  ASSERT_NE(codec, nullptr);
  EXPECT_EQ(RecordCodec::make("short"), nullptr); // nothing to learn from

  RecordPtr plain = RecordPtr::make(finishedTask(42), false);
  RecordPtr packed = plain.packed(*codec, 64);
  ASSERT_TRUE(packed->packed());
  EXPECT_LT(packed->bytes() * 2, plain->bytes()); // the point of it
  // What stays plain reads directly; the rest through PlainRecord.
  EXPECT_EQ(packed->key(), "cross-domain/done-42");
  EXPECT_STREQ(packed->uid().data(), plain->uid().data());
  EXPECT_EQ(packed->resourceVersion(), "1042");
  EXPECT_EQ(packed->tailSize(), plain->tailSize());
  PlainRecord view(*packed);
  EXPECT_FALSE(view->packed());
  for (std::size_t f = 0; f < plain->fieldCount(); ++f)
    EXPECT_EQ(view->field(f), plain->field(f)) << f;
  EXPECT_STREQ(view->field(2).data(), "\"Succeeded\""); // NUL-terminated, as plain slots are
  PlainRecord same(*plain);
  EXPECT_EQ(&*same, &*plain); // a plain record is not copied

  // Content compares equal across forms, and differences are seen in either form.
  EXPECT_TRUE(packed->sameContent(*plain));
  EXPECT_TRUE(plain->sameContent(*packed));
  EXPECT_TRUE(packed->sameContent(*plain.packed(*codec, 64)));
  RecordPtr other = RecordPtr::make(finishedTask(43), false);
  EXPECT_FALSE(packed->sameContent(*other.packed(*codec, 64)));
  Projected moved = finishedTask(42);
  moved.values[2] = "\"Failed\"";
  EXPECT_FALSE(packed->sameContent(*RecordPtr::make(moved, false)));
  EXPECT_FALSE(packed->sameContent(*RecordPtr::make(moved, false).packed(*codec, 64)));

  // Small tails, or tails that do not pack well, stay as they are.
  EXPECT_FALSE(plain.packed(*codec, 100000)->packed());
  Projected noise = finishedTask(1);
  noise.values[0].clear();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(1, 255);
  for (int i = 0; i < 300; ++i)
    noise.values[0] += static_cast<char>(byte(rng));
  EXPECT_FALSE(RecordPtr::make(noise, false).packed(*codec, 64)->packed());

  // The cache swaps a record for its packed form only while it still holds that record.
  ObjectCache cache;
  cache.put(plain);
  EXPECT_EQ(cache.packedCount(), 0u);
  EXPECT_TRUE(cache.swapIfSame(plain, packed));
  EXPECT_EQ(cache.recordBytes(), packed->bytes());
  EXPECT_EQ(cache.packedCount(), 1u);
  EXPECT_TRUE(cache.get("cross-domain/done-42")->packed());
  EXPECT_FALSE(cache.swapIfSame(plain, packed)); // it holds the packed one now
  plain = RecordPtr();
  EXPECT_EQ(cache.get("cross-domain/done-42")->key(), "cross-domain/done-42");
  cache.put(RecordPtr::make(finishedTask(42), false)); // changed: plain again
  EXPECT_EQ(cache.packedCount(), 0u);
  EXPECT_TRUE(cache.erase("cross-domain/done-42"));
  EXPECT_EQ(cache.recordBytes(), 0u);
}

// The cache's index answers as a map would through puts, replacements, erases (backward shifts
// across the wrap-around included) and growth, and costs 12 bytes a slot.
// A write's resourceVersion precondition: spliced into a merge patch's text where that is plainly
// safe, else merged by the parser; the server reads the same object either way.
TEST(KubeWriteTest, APreconditionGoesIntoTheMergePatchWhicheverWayItIsAdded) {
  using nlohmann::json;
  auto body = [](const std::string& patch, const std::string& rv) {
    KubeRequest w;
    w.version = "v1";
    w.resource = "services";
    w.namespaceName = "alice";
    w.name = "svc";
    w.body = patch;
    w.resourceVersion = rv;
    auto http = KubeClient::toHttp(w);
    EXPECT_TRUE(http.ok()) << patch;
    return http.ok() ? http.value().body : std::string();
  };
  // The bundled plugins' shape: spliced as text, the rest left byte for byte.
  const std::string annotation = R"({"metadata":{"annotations":{"a/b":"2024-05-20T08:00:10Z"}}})";
  EXPECT_EQ(
      body(annotation, "48201"),
      R"({"metadata":{"resourceVersion":"48201","annotations":{"a/b":"2024-05-20T08:00:10Z"}}})");
  EXPECT_EQ(body(R"({"metadata":{}})", "7"), R"({"metadata":{"resourceVersion":"7"}})");
  // Every other shape through the parser, with the same meaning.
  auto meaning = [&](const std::string& patch, const std::string& rv) {
    return json::parse(body(patch, rv));
  };
  for (const auto& [patch, rv, want] : std::vector<std::tuple<std::string, std::string, json>>{
           {R"({"metadata":{"resourceVersion":"1","labels":{"x":"y"}}})",
            "9",
            {{"metadata", {{"resourceVersion", "9"}, {"labels", {{"x", "y"}}}}}}},
           {R"({"spec":{"a":1}})",
            "9",
            {{"metadata", {{"resourceVersion", "9"}}}, {"spec", {{"a", 1}}}}},
           {R"( {"metadata": {"labels":{"x":"y"}}})",
            "9",
            {{"metadata", {{"resourceVersion", "9"}, {"labels", {{"x", "y"}}}}}}},
           {R"({"metadata":{"labels":{"x":"a\"b"}}})",
            "9",
            {{"metadata", {{"resourceVersion", "9"}, {"labels", {{"x", "a\"b"}}}}}}},
           {annotation,
            "9\"x",
            {{"metadata",
              {{"resourceVersion", "9\"x"}, {"annotations", {{"a/b", "2024-05-20T08:00:10Z"}}}}}}}})
    EXPECT_EQ(meaning(patch, rv), want) << patch << " with " << rv;
}

// A write's method and target: the collection's path (core or a group's, namespaced or not), then
// the object's name and subresource.
TEST(KubeWriteTest, AWriteGoesToItsObjectsPath) {
  using Verb = KubeRequest::Verb;
  auto toHttp = [](Verb verb, const std::string& group, const std::string& ns,
                   const std::string& resource, const std::string& name,
                   const std::string& subresource) {
    KubeRequest w;
    w.verb = verb;
    w.group = group;
    w.version = group.empty() ? "v1" : "v1alpha1";
    w.namespaceName = ns;
    w.resource = resource;
    w.name = name;
    w.subresource = subresource;
    w.body = verb == Verb::kDelete ? "" : "{}";
    return KubeClient::toHttp(w);
  };
  auto target = [&toHttp](auto... parts) {
    auto http = toHttp(parts...);
    EXPECT_TRUE(http.ok()) << (http.ok() ? "" : http.error());
    return http.ok() ? http.value().method + " " + http.value().target : std::string();
  };
  EXPECT_EQ(
      target(Verb::kPatch, "kuscia.secretflow", "cross-domain", "kusciatasks", "t-1", "status"),
      "PATCH /apis/kuscia.secretflow/v1alpha1/namespaces/cross-domain/kusciatasks/t-1/status");
  EXPECT_EQ(target(Verb::kPatch, "", "alice", "services", "svc", ""),
            "PATCH /api/v1/namespaces/alice/services/svc");
  EXPECT_EQ(target(Verb::kCreate, "", "alice", "events", "", ""),
            "POST /api/v1/namespaces/alice/events");
  EXPECT_EQ(target(Verb::kCreate, "", "", "namespaces", "", ""), "POST /api/v1/namespaces");
  EXPECT_EQ(target(Verb::kDelete, "kuscia.secretflow", "", "domains", "bob", ""),
            "DELETE /apis/kuscia.secretflow/v1alpha1/domains/bob");
  auto refused = toHttp(Verb::kPatch, "", "alice", "services", "a/b", "");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("'a/b' is not a valid path segment"), std::string::npos);
}

TEST(ObjectCacheTest, AnswersAsAMapThroughPutsErasesAndGrowth) {
  ObjectCache cache;
  std::map<std::string, std::string> truth; // key -> resourceVersion
  std::mt19937_64 rng(11);
  auto record = [](const std::string& name, const std::string& rv) {
    Projected p;
    p.name = name;
    p.namespaceName = "ns";
    p.uid = "u-" + name;
    p.resourceVersion = rv;
    return RecordPtr::make(p, false);
  };
  for (int step = 0; step < 60000; ++step) {
    // Half of the names from a small set (replacements and erases), half spread out.
    std::string name = "o-" + std::to_string(rng() % 2 == 0 ? rng() % 200 : rng() % 20000);
    std::string key = "ns/" + name;
    switch (rng() % 4) {
    case 0:
    case 1: {
      std::string rv = std::to_string(step);
      RecordPtr before = cache.put(record(name, rv));
      auto it = truth.find(key);
      ASSERT_EQ(static_cast<bool>(before), it != truth.end()) << step;
      if (before) {
        EXPECT_EQ(before->resourceVersion(), it->second);
      }
      truth[key] = rv;
      break;
    }
    case 2: {
      RecordPtr gone = cache.erase(key);
      ASSERT_EQ(static_cast<bool>(gone), truth.erase(key) > 0) << step;
      if (gone) {
        EXPECT_EQ(gone->key(), key);
      }
      break;
    }
    default: {
      RecordPtr now = cache.get(key);
      auto it = truth.find(key);
      ASSERT_EQ(static_cast<bool>(now), it != truth.end()) << step;
      if (!now) break;
      EXPECT_EQ(now->resourceVersion(), it->second);
      EXPECT_TRUE(cache.swapIfSame(now, record(name, it->second + "s")));
      EXPECT_FALSE(cache.swapIfSame(now, record(name, "stale"))); // it holds the new one
      it->second += "s";
    }
    }
    if (step % 5000 == 0) {
      ASSERT_EQ(cache.size(), truth.size());
      std::size_t seen = 0;
      cache.forEach([&](const RecordPtr& r) {
        ++seen;
        EXPECT_EQ(truth.at(std::string(r->key())), r->resourceVersion());
      });
      EXPECT_EQ(seen, truth.size());
    }
  }
  for (const auto& [key, rv] : truth)
    ASSERT_EQ(cache.get(key)->resourceVersion(), rv);
  EXPECT_FALSE(cache.get("ns/none"));
  EXPECT_LE(cache.indexBytes(),
            std::size_t{768} + truth.size() * 12 * 16 / 7); // 7/16 full, 64 slots
  std::size_t bytes = 0;
  cache.forEach([&bytes](const RecordPtr& r) { bytes += r->bytes(); });
  EXPECT_EQ(cache.recordBytes(), bytes);
  for (const auto& [key, rv] : truth)
    EXPECT_TRUE(cache.erase(key));
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.recordBytes(), 0u);
  for (const auto& [key, rv] : truth)
    EXPECT_FALSE(cache.get(key));
}

// The forgotten objects' table answers as a map would through growth and deletions (backward
// shifts across the wrap-around included), with keys crowded into few home slots.
TEST(DigestTableTest, AnswersAsAMapThroughInsertsErasesAndGrowth) {
  DigestTable table;
  std::unordered_map<uint64_t, uint64_t> truth;
  std::mt19937_64 rng(7);
  auto key = [&] {
    // Half of them from a small set (repeated puts and erases), half spread out.
    uint64_t k = rng() % 2 == 0 ? (rng() % 300) + 2 : rng() | 2;
    return k;
  };
  for (int step = 0; step < 200000; ++step) {
    uint64_t k = key();
    switch (rng() % 3) {
    case 0:
    case 1: {
      uint64_t d = rng();
      table.put(k, d);
      truth[k] = d;
      break;
    }
    default: EXPECT_EQ(table.erase(k), truth.erase(k) > 0) << step; break;
    }
    if (step % 5000 == 0) {
      ASSERT_EQ(table.size(), truth.size());
      for (const auto& [tk, td] : truth) {
        auto kept = table.find(tk);
        ASSERT_TRUE(kept && DigestTable::same(*kept, td)) << step;
        ASSERT_FALSE(DigestTable::same(*kept, td ^ 1)) << step;
      }
    }
  }
  for (const auto& [tk, td] : truth) {
    auto kept = table.find(tk);
    EXPECT_TRUE(kept && DigestTable::same(*kept, td));
  }
  EXPECT_FALSE(table.find(1));
  EXPECT_LE(table.bytes(), truth.size() * 192 / 7 + 768); // 12-byte slots, at worst 7/16 full
  // Everything out: the table is empty and finds nothing.
  std::vector<uint64_t> keys;
  for (const auto& [tk, td] : truth)
    keys.push_back(tk);
  for (uint64_t k : keys)
    EXPECT_TRUE(table.erase(k));
  EXPECT_TRUE(table.empty());
  for (uint64_t k : keys)
    EXPECT_FALSE(table.find(k));
}

// A slot keeps 48 bits of the digest: a change in them is a change, one above them is not seen.
TEST(DigestTableTest, KeepsFortyEightBitsOfTheDigest) {
  DigestTable table;
  table.put(5, 0x123456789abcdef0ULL);
  auto kept = table.find(5);
  ASSERT_TRUE(kept);
  EXPECT_TRUE(DigestTable::same(*kept, 0x123456789abcdef0ULL));
  EXPECT_TRUE(DigestTable::same(*kept, 0xffff56789abcdef0ULL));
  EXPECT_FALSE(DigestTable::same(*kept, 0x123456789abcdef1ULL));
  EXPECT_FALSE(DigestTable::same(*kept, 0x1234d6789abcdef0ULL)); // bit 47
  // Keys that differ only above the bits a slot keeps of them are still two entries.
  table.put(uint64_t{5} | (uint64_t{1} << 60), 1);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_TRUE(DigestTable::same(*table.find(5), 0x123456789abcdef0ULL));
}

} // namespace
} // namespace kuscia_host::kube
