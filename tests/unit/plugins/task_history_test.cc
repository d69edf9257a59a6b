// task-history: how recordings merge, the store (the same suite on SQLite and on a real
// PostgreSQL server the test starts), and the plugin through the fake host: a task recorded and
// served after it and its pods are gone, a restarted host that writes nothing new and loses no
// fact, two parties in one record, and a database that is down for a while.
#include "task_history.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <kuscia_host/kube_text.hpp>
#include <map>
#include <mutex>
#include <set>
#include <thread>

// zlib: an earlier version's packing, written by hand.
#include <zlib.h>
#include <zstd.h>

#include "history_api.h"
#include "history_doc.h"
#include "history_reader.h"
#include "kuscia_fixtures.h"
#include "pack_dictionary.h"
#include "postgres_server.h"
#include "sql_db.h"
#include <kuscia_model/json_text.h>
#include <kuscia_model/timeline.h>

namespace kuscia_host::plugins::history {
namespace {

using nlohmann::json;
using test::deliver;
using test::fixture;

constexpr int64_t kSecond = 1000000000;

int64_t at(const char* text) {
  return *sdk::parseTime(text);
}

// A temporary directory, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/kh-history-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// A pod entry of a recording as DomainPods makes it.
json podEntry(const std::string& key, const json& times, const json& reasons = json()) {
  json flat = times;
  if (!reasons.is_null()) flat["reasons"] = reasons;
  return model::timeline::entry(key, flat, true);
}

json serviceEntry(const std::string& key, const json& times) {
  return model::timeline::entry(key, times, false);
}

// A two-party task of one pod and one service each, created at `created` and ready after
// `aliceReady` and `bobReady` seconds (0: not ready yet), as `recorder` records it.
Recording recording(const std::string& task, const std::string& recorder, int64_t created,
                    int aliceReady, int bobReady, const std::string& phase = "Running") {
  json entries = json::object();
  auto t = [&](int seconds) {
    return sdk::formatTime(created + seconds * kSecond, sdk::TimePrecision::kAsGiven);
  };
  for (auto [party, ready] : {std::pair{"alice", aliceReady}, std::pair{"bob", bobReady}}) {
    std::string pod = std::string(party) + "/" + task + "-0";
    json times = {{"createTime", t(0)}, {"scheduleTime", t(0)}, {"startTime", t(1)}};
    if (ready > 0) times["readyTime"] = t(ready);
    entries[pod] = podEntry(pod, times);
    std::string svc = pod + "-fed";
    json stimes = {{"createTime", t(0)}};
    if (ready > 0) stimes["readyTime"] = t(ready);
    entries[svc] = serviceEntry(svc, stimes);
  }
  json doc = {{"task", task},
              {"namespace", "cross-domain"},
              {"phase", phase},
              {"createTime", t(0)},
              {"entries", entries}};
  return Recording{task, "cross-domain", recorder, created + 60 * kSecond, doc};
}

// The recording as the plugin queues it: its document as text, with its entries' times
// (TimelineText, as DomainPods::documentText makes it), and no DOM.
Recording asText(Recording r) {
  model::TimelineText text;
  text.json = model::dumpJson(r.document);
  text.phase = r.document.value("phase", "");
  text.createTime = r.document.value("createTime", "");
  for (const auto& [key, entry] : r.document["entries"].items())
    text.entries.push_back(model::timeline::entryTimes(key, entry));
  r.text = std::move(text);
  r.document = json();
  return r;
}

TEST(HistoryDocTest, AMergedRecordingKeepsWhatARestartedHostNoLongerKnows) {
  const std::string key = "alice/p-0";
  json before = {{"task", "t"},
                 {"entries",
                  {{key, podEntry(key,
                                  {{"createTime", "2024-05-20T08:00:00Z"},
                                   {"startTime", "2024-05-20T08:00:02Z"},
                                   {"firstReadyTime", "2024-05-20T08:00:09Z"},
                                   {"readyTime", "2024-05-20T08:00:09Z"},
                                   {"imagePullStartTime", "2024-05-20T08:00:03Z"},
                                   {"imagePullEndTime", "2024-05-20T08:00:07Z"}},
                                  {{"pulling", {{"reason", "Pulling"}}}})}}}};
  // The same task read from its status alone, after the pod is gone; a later Ready.
  json after = {{"task", "t"},
                {"phase", "Succeeded"},
                {"entries",
                 {{key, podEntry(key, {{"createTime", "2024-05-20T08:00:00Z"},
                                       {"startTime", "2024-05-20T08:00:02Z"},
                                       {"readyTime", "2024-05-20T08:00:20Z"}})}}}};
  json merged = mergeRecording(before, after);
  const json& times = merged["entries"][key]["times"];
  EXPECT_EQ(times["imagePullStartTime"], "2024-05-20T08:00:03Z");
  EXPECT_EQ(times["firstReadyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(times["readyTime"], "2024-05-20T08:00:20Z") << "the newer value wins";
  EXPECT_EQ(merged["entries"][key]["reasons"]["pulling"]["reason"], "Pulling");
  EXPECT_EQ(merged["phase"], "Succeeded");
  EXPECT_TRUE(merged["entries"][key]["durations"].contains("imagePull"));
  EXPECT_EQ(mergeRecording(merged, after), merged) << "merging again changes nothing";
  // A pod recreated under the same name is a new incarnation: nothing of the old one stays.
  json recreated = {{"entries", {{key, podEntry(key, {{"createTime", "2024-05-20T09:00:00Z"}})}}}};
  json next = mergeRecording(merged, recreated);
  EXPECT_FALSE(next["entries"][key]["times"].contains("imagePullStartTime"));
  EXPECT_FALSE(next["entries"][key]["times"].contains("readyTime"));
}

TEST(HistoryDocTest, ARowFromTheRecordingsInPlaceIsTheRowOfTheirCombinedDocument) {
  // The store's writer summarises a task's recordings where they are (combinedView), without
  // building the combined document: the row must be the one that document makes, whatever the
  // order the recordings come in. An entry no recorder owns goes to the latest recording holding
  // it, ties by recorder name: carol's recording is as old as bob's and names sort after his.
  int64_t created = at("2024-05-20T08:00:00Z");
  Recording alice = recording("t", "alice", created, 5, 0); // bob not ready in alice's view
  Recording bob = recording("t", "bob", created, 5, 8);
  Recording carol = recording("t", "carol", created, 4, 9);
  alice.atNanos = bob.atNanos + kSecond;
  carol.atNanos = bob.atNanos;
  alice.document["phase"] = "Succeeded";
  auto t = [&](int seconds) {
    return sdk::formatTime(created + seconds * kSecond, sdk::TimePrecision::kAsGiven);
  };
  const std::string dave = "dave/t-0";
  bob.document["entries"][dave] =
      podEntry(dave, {{"createTime", t(0)}, {"startTime", t(1)}, {"readyTime", t(10)}});
  carol.document["entries"][dave] =
      podEntry(dave, {{"createTime", t(0)}, {"startTime", t(1)}, {"readyTime", t(11)}});
  const Recording* recordings[] = {&alice, &bob, &carol};
  std::vector<std::size_t> order = {0, 1, 2};
  const int64_t now = created + 60 * kSecond;
  // The same recordings as text (what the plugin queues): each of them, in turn, as text.
  const Recording texts[] = {asText(alice), asText(bob), asText(carol)};
  do {
    for (unsigned asTextMask = 0; asTextMask < 8; ++asTextMask) {
      std::vector<RecordingRef> refs;
      std::vector<StoredRecording> copies;
      for (std::size_t i : order) {
        const Recording* r = recordings[i];
        if ((asTextMask >> i & 1) != 0)
          refs.push_back({r->recorder, r->atNanos, nullptr, &*texts[i].text});
        else
          refs.push_back({r->recorder, r->atNanos, &r->document});
        copies.push_back({r->recorder, r->atNanos, r->document});
      }
      CombinedView view = combinedView(refs);
      json doc = combine(copies);
      std::vector<std::string> viewedKeys;
      for (const auto& e : view.entries) {
        viewedKeys.emplace_back(e.key);
        // Where it is taken from: the entry of that recording, as a document or as its times.
        const std::size_t from = order[e.from];
        ASSERT_EQ(e.times != nullptr, (asTextMask >> from & 1) != 0) << e.key;
        if (e.entry != nullptr) {
          EXPECT_EQ(*e.entry, doc["entries"][std::string(e.key)]) << e.key;
        }
        if (e.times != nullptr) {
          const json& entry = doc["entries"][std::string(e.key)];
          EXPECT_EQ(e.times->readyTime, model::timeline::entryTimes(e.key, entry).readyTime)
              << e.key;
        }
      }
      std::vector<std::string> keys;
      for (const auto& [key, entry] : doc["entries"].items())
        keys.push_back(key);
      ASSERT_EQ(viewedKeys, keys);
      EXPECT_EQ(doc["entries"][dave]["times"]["readyTime"], t(11)) << "carol's, the later name";
      EXPECT_EQ(doc["entries"]["bob/t-0"]["times"]["readyTime"], t(8)) << "bob's own";
      EXPECT_EQ(recordings[order[view.latestIndex]]->recorder, "alice") << "the latest";
      EXPECT_EQ(view.phase, "Succeeded") << "alice's, the latest";
      TaskRow inPlace = taskRowOf(view, now), built = taskRowOf(doc, now);
      EXPECT_EQ(inPlace.summary, built.summary);
      EXPECT_EQ(inPlace.phase, "Succeeded");
      EXPECT_EQ(inPlace.createNanos, built.createNanos);
      EXPECT_EQ(inPlace.startupSeconds, built.startupSeconds);
      EXPECT_DOUBLE_EQ(inPlace.startupSeconds.value_or(0), 11);
      ASSERT_EQ(inPlace.parties.size(), built.parties.size());
      for (std::size_t i = 0; i < inPlace.parties.size(); ++i) {
        EXPECT_EQ(inPlace.parties[i].name, built.parties[i].name);
        EXPECT_EQ(inPlace.parties[i].path, built.parties[i].path);
      }
      EXPECT_EQ(inPlace.path, built.path);
    }
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(HistoryDocTest, EachRecorderIsTheAuthorityOnItsOwnEntries) {
  int64_t created = at("2024-05-20T08:00:00Z");
  Recording alice = recording("t", "alice", created, 5, 0);
  Recording bob = recording("t", "bob", created, 5, 8);
  // alice's host recorded bob's pod from the status only; bob's host knows its image pull.
  bob.document["entries"]["bob/t-0"]["times"]["imagePullStartTime"] = "2024-05-20T08:00:02Z";
  bob.document["entries"]["bob/t-0"]["times"]["imagePullEndTime"] = "2024-05-20T08:00:06Z";
  alice.atNanos = bob.atNanos + kSecond; // alice's recording is the later one
  json doc =
      combine({{"alice", alice.atNanos, alice.document}, {"bob", bob.atNanos, bob.document}});
  EXPECT_EQ(doc["entries"]["bob/t-0"]["times"]["imagePullEndTime"], "2024-05-20T08:00:06Z");
  EXPECT_EQ(doc["entries"]["bob/t-0"]["times"]["readyTime"], "2024-05-20T08:00:08Z");
  TaskRow row = taskRowOf(doc, created + 60 * kSecond);
  EXPECT_TRUE(row.complete);
  EXPECT_DOUBLE_EQ(*row.startupSeconds, 8);
  std::vector<std::string> parties;
  for (const auto& p : row.parties)
    parties.push_back(p.name);
  EXPECT_EQ(parties, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_EQ(row.blameParty, "bob");
  // The row's columns are read off the summary's values; they say what its JSON says, and the
  // JSON stored is what the summary of the document is.
  const json& summary = row.summary;
  EXPECT_EQ(summary, kuscia_host::model::timeline::summarize(doc, created + 60 * kSecond));
  TaskRow::PathSeconds path{};
  std::map<std::string, TaskRow::PathSeconds> byParty;
  for (const auto& p : summary["criticalPath"]) {
    const auto& names = kuscia_host::model::timeline::kPhaseNames;
    auto i = static_cast<std::size_t>(
        std::find(std::begin(names), std::end(names), p["phase"].get<std::string>()) -
        std::begin(names));
    ASSERT_LT(i, path.size()) << p.dump();
    path[i] += p["seconds"].get<double>();
    byParty[p["party"].get<std::string>()][i] += p["seconds"].get<double>();
  }
  double onPath = 0;
  for (double seconds : row.path)
    onPath += seconds;
  EXPECT_DOUBLE_EQ(onPath, 8) << "the path runs from the task's creation to its last ready";
  for (std::size_t i = 0; i < path.size(); ++i)
    EXPECT_DOUBLE_EQ(row.path[i], path[i]) << kuscia_host::model::timeline::kPhaseNames[i];
  for (const auto& p : row.parties) {
    for (std::size_t i = 0; i < path.size(); ++i)
      EXPECT_DOUBLE_EQ(p.path[i], byParty[p.name][i]) << p.name;
    ASSERT_TRUE(p.startupSeconds.has_value()) << p.name;
    EXPECT_DOUBLE_EQ(*p.startupSeconds, summary["parties"][p.name]["startupSeconds"].get<double>());
  }
  EXPECT_DOUBLE_EQ(*row.parties[0].startupSeconds, 5);
}

// The store suite, on each database.
class HistoryStoreTest : public ::testing::TestWithParam<std::string> {
protected:
  static kuscia_host::test::PostgresServer& postgres() {
    static kuscia_host::test::PostgresServer server;
    return server;
  }
  void SetUp() override {
    if (GetParam() == "postgresql") {
      if (!postgres().available()) GTEST_FAIL() << "PostgreSQL: " << postgres().why();
      // A fresh database per test.
      db_ = "t" + std::to_string(++counter_) + "_" + std::to_string(getpid());
      postgres().psql("CREATE DATABASE " + db_);
      database_ = postgres().uri(db_);
    } else {
      database_ = dir_.path + "/history.db";
    }
    store_ = openStore(database_, "");
  }
  std::unique_ptr<HistoryStore> reopen() { return openStore(database_, ""); }
  // Every page of `q`, in order (at most 100 pages).
  std::vector<HistoryItem> allPages(HistoryQuery q) {
    std::vector<HistoryItem> items;
    for (int pages = 0; pages < 100; ++pages) {
      HistoryPage page = store_->list(q);
      for (auto& it : page.items)
        items.push_back(std::move(it));
      if (!page.next) break;
      q.after = page.next;
    }
    return items;
  }
  static std::vector<std::string> names(const std::vector<HistoryItem>& items) {
    std::vector<std::string> out;
    for (const auto& it : items)
      out.push_back(it.task);
    return out;
  }

  TempDir dir_;
  std::string database_, db_;
  std::unique_ptr<HistoryStore> store_;
  static inline int counter_ = 0;
};

TEST_P(HistoryStoreTest, ARecordingIsWrittenOnceWhateverTimesItComes) {
  int64_t created = at("2024-05-20T08:00:00Z");
  EXPECT_TRUE(store_->record(recording("t1", "alice", created, 5, 0)));
  EXPECT_FALSE(store_->record(recording("t1", "alice", created, 5, 0))) << "unchanged";
  auto later = recording("t1", "alice", created, 5, 0);
  later.atNanos += 30 * kSecond;
  EXPECT_FALSE(store_->record(later)) << "a replayed watch: the same document";
  EXPECT_TRUE(store_->record(recording("t1", "alice", created, 5, 7)));
  EXPECT_EQ(store_->count(), 1u);
  auto other = reopen(); // another connection, as a restarted host or the admin API has
  EXPECT_FALSE(other->record(recording("t1", "alice", created, 5, 7)));
  auto doc = other->document("t1");
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["entries"]["bob/t1-0"]["times"]["readyTime"], "2024-05-20T08:00:07Z");
  EXPECT_FALSE(other->document("nope"));
}

TEST_P(HistoryStoreTest, TwoPartiesRecordOneTask) {
  int64_t created = at("2024-05-20T08:00:00Z");
  store_->record(recording("t", "alice", created, 5, 0));
  auto other = reopen(); // bob's host, sharing the database
  other->record(recording("t", "bob", created, 0, 9));
  EXPECT_EQ(store_->count(), 1u);
  auto page = store_->list({});
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_TRUE(page.items[0].summary["complete"].get<bool>()) << page.items[0].summary.dump();
  EXPECT_DOUBLE_EQ(page.items[0].summary["startupSeconds"].get<double>(), 9);
  for (const char* party : {"alice", "bob"}) {
    HistoryQuery q;
    q.party = party;
    EXPECT_EQ(store_->list(q).items.size(), 1u) << party;
  }
}

// A task's recordings by two domains written together (as one host recording both takes them)
// store what they store written one at a time: the same document, summary and stats.
TEST_P(HistoryStoreTest, RecordingsWrittenTogetherStoreWhatTheyStoreApart) {
  int64_t created = at("2024-05-20T08:00:00Z");
  auto apartA = recording("apart", "alice", created, 5, 0);
  auto apartB = recording("apart", "bob", created + kSecond, 0, 9);
  store_->record(apartA);
  store_->record(apartB);
  // The same recordings of a task of another name, created a day later (stats apart).
  auto rename = [&](Recording r) {
    r.task = "together";
    r.document["task"] = "together";
    return r;
  };
  auto togetherA = rename(apartA), togetherB = rename(apartB);
  EXPECT_EQ(store_->recordTogether({&togetherA, &togetherB}), (std::vector<bool>{true, true}));
  EXPECT_EQ(store_->recordTogether({&togetherA, &togetherB}), (std::vector<bool>{false, false}))
      << "unchanged";
  auto apart = store_->document("apart"), together = store_->document("together");
  ASSERT_TRUE(apart && together);
  (*together)["task"] = "apart";
  EXPECT_EQ(*together, *apart);
  auto page = store_->list({});
  ASSERT_EQ(page.items.size(), 2u);
  EXPECT_EQ(page.items[0].summary, page.items[1].summary);
  EXPECT_TRUE(page.items[0].summary["complete"].get<bool>());
  for (const std::string groupBy : {"", "party", "blamePhase"}) {
    auto groups = store_->stats(0, created + 86400 * kSecond, groupBy);
    for (const auto& g : groups)
      EXPECT_EQ(g.tasks, 2u) << groupBy << " " << g.key;
  }
  // Bob's Ready moves: only his recording changes, and the task's summary with it.
  auto later = rename(recording("apart", "bob", created + kSecond, 0, 12));
  EXPECT_EQ(store_->recordTogether({&togetherA, &later}), (std::vector<bool>{false, true}));
  auto now = store_->document("together");
  EXPECT_EQ((*now)["entries"]["bob/apart-0"]["times"]["readyTime"], "2024-05-20T08:00:13Z");
  HistoryQuery q;
  q.prefix = "together";
  EXPECT_DOUBLE_EQ(store_->list(q).items.at(0).summary["startupSeconds"].get<double>(), 12);
  auto other = recording("other", "carol", created, 5, 5);
  EXPECT_THROW(store_->recordTogether({&togetherA, &other}), StoreError)
      << "recordings of two tasks are not one transaction";
}

// The plugin queues its recordings as text (TimelineText): what the store makes of them is what
// it makes of the same documents, new, merged into a recording of the same recorder, unchanged,
// and written together with a document.
TEST_P(HistoryStoreTest, ATextRecordingStoresWhatItsDocumentStores) {
  int64_t created = at("2024-05-20T08:00:00Z");
  auto renamed = [](Recording r, const std::string& name) {
    r.task = name;
    r.document["task"] = name;
    return r;
  };
  const Recording steps[][2] = {
      {recording("t", "alice", created, 5, 0), recording("t", "bob", created, 0, 0)},
      {recording("t", "alice", created, 5, 0), recording("t", "bob", created, 0, 9)},
      {recording("t", "alice", created, 5, 9, "Succeeded"), recording("t", "bob", created, 0, 9)}};
  std::vector<std::vector<bool>> changed;
  for (const auto& step : steps) {
    Recording domA = renamed(step[0], "dom"), domB = renamed(step[1], "dom");
    Recording textA = asText(renamed(step[0], "text")), textB = asText(renamed(step[1], "text"));
    changed.push_back(store_->recordTogether({&domA, &domB}));
    EXPECT_EQ(store_->recordTogether({&textA, &textB}), changed.back());
    // Alone, and beside a document.
    Recording loneText = asText(renamed(step[0], "lone")), loneDom = renamed(step[1], "lone");
    EXPECT_EQ(store_->recordTogether({&loneText, &loneDom}), changed.back());
  }
  EXPECT_EQ(changed, (std::vector<std::vector<bool>>{{true, true}, {false, true}, {true, false}}));
  auto dom = store_->document("dom");
  ASSERT_TRUE(dom);
  for (const char* name : {"text", "lone"}) {
    auto doc = store_->document(name);
    ASSERT_TRUE(doc) << name;
    (*doc)["task"] = "dom";
    EXPECT_EQ(*doc, *dom) << name;
  }
  EXPECT_EQ((*dom)["phase"], "Succeeded");
  auto page = store_->list({});
  ASSERT_EQ(page.items.size(), 3u);
  for (const auto& item : page.items) {
    EXPECT_EQ(item.summary, page.items[0].summary) << item.task;
    EXPECT_EQ(item.phase, "Succeeded") << item.task;
  }
  EXPECT_DOUBLE_EQ(page.items[0].summary["startupSeconds"].get<double>(), 9);
}

TEST_P(HistoryStoreTest, ListsNewestFirstByFilterAndPage) {
  int64_t base = at("2024-11-01T00:00:00Z");
  for (int i = 0; i < 25; ++i) {
    // Every third task slow (bob ready after 40 s), every fifth failed.
    auto r = recording("task-" + std::to_string(100 + i), "alice", base + i * (3600 * kSecond), 5,
                       i % 3 == 0 ? 40 : 6, i % 5 == 0 ? "Failed" : "Succeeded");
    if (i == 24) // alice only
      for (const char* key : {"bob/task-124-0", "bob/task-124-0-fed"})
        r.document["entries"].erase(key);
    ASSERT_TRUE(store_->record(r));
  }
  // Pages of 10 walk all 25, newest first, none twice.
  HistoryQuery q;
  q.limit = 10;
  std::vector<std::string> seen = names(allPages(q));
  ASSERT_EQ(seen.size(), 25u);
  for (int i = 0; i < 25; ++i)
    EXPECT_EQ(seen[static_cast<std::size_t>(i)], "task-" + std::to_string(124 - i));
  auto count = [&](HistoryQuery f) {
    f.limit = 100;
    return store_->list(f).items.size();
  };
  HistoryQuery f;
  f.phase = "Failed";
  EXPECT_EQ(count(f), 5u);
  f = {};
  f.minStartupSeconds = 30;
  EXPECT_EQ(count(f), 8u); // i = 0, 3, ..., 21 (24 has no bob)
  f = {};
  f.party = "bob";
  EXPECT_EQ(count(f), 24u);
  f = {};
  f.since = base + 10 * (3600 * kSecond);
  f.until = base + 20 * (3600 * kSecond);
  EXPECT_EQ(count(f), 10u);
  f = {};
  f.prefix = "task-11";
  EXPECT_EQ(count(f), 10u);
  // Filters on the walked index alone (party, creation, name) find a page's keys first, then its
  // rows: pages of a few still come newest first, none twice, each row the task's own.
  auto walk = [&](HistoryQuery w) {
    w.limit = 4;
    auto items = allPages(w);
    for (const auto& it : items) {
      int i = std::stoi(it.task.substr(5)) - 100;
      EXPECT_EQ(it.phase, i % 5 == 0 ? "Failed" : "Succeeded") << it.task;
      EXPECT_EQ(it.createNanos, base + i * (3600 * kSecond)) << it.task;
      double startup = i % 3 == 0 ? 40 : 6; // bob's ready, after alice's 5 s
      if (i == 24) startup = 5;             // alice only
      EXPECT_EQ(it.summary.value("startupSeconds", 0.0), startup) << it.task;
    }
    return names(items);
  };
  auto newest = [](int from, int to) { // task-<from> down to task-<to>
    std::vector<std::string> out;
    for (int i = from; i >= to; --i)
      out.push_back("task-" + std::to_string(i));
    return out;
  };
  f = {};
  f.party = "bob";
  EXPECT_EQ(walk(f), newest(123, 100));
  f.since = base + 10 * (3600 * kSecond);
  EXPECT_EQ(walk(f), newest(123, 110));
  f = {};
  f.prefix = "task-1";
  f.until = base + 20 * (3600 * kSecond);
  EXPECT_EQ(walk(f), newest(119, 100));
  f.prefix = "task-12";
  EXPECT_EQ(walk(f), std::vector<std::string>{});
  f.until.reset();
  EXPECT_EQ(walk(f), newest(124, 120));
  f = {};
  f.blamePhase = store_->list({}).items.front().summary["blame"]["phase"];
  EXPECT_GE(count(f), 1u);
  f.blamePhase = "no-such-phase";
  EXPECT_EQ(count(f), 0u);
  // The slowest first, one page: the eight slow ones (40 s), then the quick.
  f = {};
  f.slowest = true;
  f.limit = 9;
  HistoryPage slow = store_->list(f);
  ASSERT_EQ(slow.items.size(), 9u);
  EXPECT_FALSE(slow.next);
  EXPECT_DOUBLE_EQ(slow.items[0].summary["startupSeconds"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(slow.items[7].summary["startupSeconds"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(slow.items[8].summary["startupSeconds"].get<double>(), 6);
}

TEST_P(HistoryStoreTest, StatsGroupTasksByPartyAndDay) {
  int64_t base = at("2024-11-01T00:00:00Z");
  for (int i = 0; i < 10; ++i)
    store_->record(recording("s-" + std::to_string(i), "alice",
                             base + (i < 5 ? 0 : 86400) * kSecond + i * kSecond, 4, 4 + i));
  store_->record(recording("s-pending", "alice", base, 4, 0));
  int64_t until = base + 2 * (86400 * kSecond);
  json all = statsJson(store_->stats(base, until, ""));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["tasks"], 11);
  EXPECT_EQ(all[0]["complete"], 10);
  EXPECT_DOUBLE_EQ(all[0]["startupSeconds"]["p50"].get<double>(), 8); // 4..13, nearest rank
  EXPECT_DOUBLE_EQ(all[0]["startupSeconds"]["p99"].get<double>(), 13);
  json byDay = statsJson(store_->stats(base, until, "day"));
  ASSERT_EQ(byDay.size(), 2u) << byDay.dump();
  EXPECT_EQ(byDay[0]["key"], "2024-11-01");
  EXPECT_EQ(byDay[0]["tasks"], 6);
  EXPECT_EQ(byDay[0]["complete"], 5);
  EXPECT_DOUBLE_EQ(byDay[0]["startupSeconds"]["p50"].get<double>(), 6); // 4..8
  EXPECT_DOUBLE_EQ(byDay[1]["startupSeconds"]["p99"].get<double>(), 13);
  double onPath = 0;
  for (const auto& [phase, s] : byDay[0]["phaseSeconds"].items())
    onPath += s["total"].get<double>();
  EXPECT_DOUBLE_EQ(onPath, 4 + 5 + 6 + 7 + 8) << "the critical path's seconds add up to startups";
  json byParty = statsJson(store_->stats(base, until, "party"));
  ASSERT_EQ(byParty.size(), 2u);
  EXPECT_EQ(byParty[0]["key"], "alice");
  EXPECT_EQ(byParty[0]["tasks"], 11);
  EXPECT_DOUBLE_EQ(byParty[0]["startupSeconds"]["p90"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(byParty[1]["startupSeconds"]["p90"].get<double>(), 12);
  EXPECT_GT(byParty[1]["phaseSeconds"]["readiness"]["total"].get<double>(), 0);
  // The web page's chart: a group per day and party.
  json chart = statsJson(store_->stats(base, until, "day,party"));
  ASSERT_EQ(chart.size(), 4u);
  EXPECT_EQ(chart[3]["key"], "2024-11-02/bob");
  EXPECT_EQ(chart[3]["day"], "2024-11-02");
  EXPECT_EQ(chart[3]["party"], "bob");
  EXPECT_DOUBLE_EQ(chart[3]["startupSeconds"]["p50"].get<double>(), 11); // 9..13
  // A range that starts mid-day: the partial day from the tasks themselves, the rest per day.
  json edge = statsJson(store_->stats(base + 3 * kSecond, until, ""));
  EXPECT_EQ(edge[0]["tasks"], 7) << edge.dump(); // s-3, s-4 and the five of the second day
  EXPECT_DOUBLE_EQ(edge[0]["startupSeconds"]["p50"].get<double>(), 10);
  // By party too, the partial day read from the parties' rows (a party at a time) and the
  // range's end mid-day as well: each party's s-3 to s-7 (s-5 to s-7 from the second day's raw
  // rows).
  json edgeParty =
      statsJson(store_->stats(base + 3 * kSecond, base + (86400 + 8) * kSecond, "party"));
  ASSERT_EQ(edgeParty.size(), 2u) << edgeParty.dump();
  for (const auto& g : edgeParty) {
    EXPECT_EQ(g["tasks"], 5) << edgeParty.dump();
    EXPECT_EQ(g["complete"], 5) << edgeParty.dump();
  }
  EXPECT_DOUBLE_EQ(edgeParty[1]["startupSeconds"]["p50"].get<double>(), 9) << edgeParty.dump();
  // A task recorded again with another startup counts once, with the new one; a pruned task
  // counts no more.
  store_->record(recording("s-9", "alice", base + 86400 * kSecond + 9 * kSecond, 4, 30));
  json again = statsJson(store_->stats(base, until, ""));
  EXPECT_EQ(again[0]["tasks"], 11);
  EXPECT_DOUBLE_EQ(again[0]["startupSeconds"]["p99"].get<double>(), 30);
  store_->prune(base + 60 * kSecond, 0, 100); // the first day's six
  json pruned = statsJson(store_->stats(base, until, "day"));
  ASSERT_EQ(pruned.size(), 1u);
  EXPECT_EQ(pruned[0]["tasks"], 5);
  json blame = statsJson(store_->stats(base, until, "blamePhase"));
  std::size_t tasks = 0;
  for (const auto& g : blame)
    tasks += g["tasks"].get<std::size_t>();
  EXPECT_EQ(tasks, 5u);
}

TEST_P(HistoryStoreTest, StatsByPartyCountPartiesSeenOnlyInAPartialDay) {
  // The partial days at the ends of a range are read one party at a time, the parties found in
  // task_parties itself: a party that only took part at the edges (no whole day of stats_days
  // holds it) is counted too, and a party outside the range is not.
  int64_t base = at("2024-11-01T00:00:00Z");
  const int64_t day = int64_t{86400} * kSecond;
  auto withParty = [&](const std::string& task, int64_t created, const std::string& party) {
    Recording r = recording(task, "alice", created, 4, 5);
    std::string pod = party + "/" + task + "-0";
    r.document["entries"][pod] = podEntry(
        pod, {{"createTime", sdk::formatTime(created, sdk::TimePrecision::kAsGiven)},
              {"startTime", sdk::formatTime(created + 2 * kSecond, sdk::TimePrecision::kAsGiven)},
              {"readyTime", sdk::formatTime(created + 7 * kSecond, sdk::TimePrecision::kAsGiven)}});
    store_->record(r);
  };
  store_->record(recording("w-0", "alice", base + day + 10 * kSecond, 4, 5)); // the whole day
  withParty("e-0", base + int64_t{12} * 3600 * kSecond, "carol");             // first partial day
  withParty("e-1", base + 2 * day + 60 * kSecond, "dave");                    // last partial day
  withParty("e-2", base + 3 * day, "erin");                                   // after the range
  json byParty =
      statsJson(store_->stats(base + 3600 * kSecond, base + 2 * day + 3600 * kSecond, "party"));
  std::map<std::string, int> tasks;
  for (const auto& g : byParty)
    tasks[g["key"].get<std::string>()] = g["tasks"].get<int>();
  EXPECT_EQ(tasks,
            (std::map<std::string, int>{{"alice", 3}, {"bob", 3}, {"carol", 1}, {"dave", 1}}))
      << byParty.dump();
  for (const auto& g : byParty)
    if (g["key"] == "carol") {
      EXPECT_DOUBLE_EQ(g["startupSeconds"]["p50"].get<double>(), 7) << byParty.dump();
    }
}

TEST_P(HistoryStoreTest, PerDayStatsStayWhatTheTasksSay) {
  // record() keeps stats_days in step by differences: whatever the order of recordings, it must
  // hold what rebuildStats() computes from the tasks themselves.
  int64_t base = at("2024-11-01T00:00:00Z");
  auto other = reopen(); // bob's host
  for (int i = 0; i < 6; ++i) {
    std::string task = "d-" + std::to_string(i);
    int64_t created = base + (i % 2) * int64_t{86400} * kSecond + i * kSecond;
    store_->record(recording(task, "alice", created, 3, 0));     // bob not ready yet
    other->record(recording(task, "bob", created, 3, 4 + i));    // complete
    store_->record(recording(task, "alice", created, 3, 4 + i)); // the same again
  }
  other->record(recording("d-0", "bob", base, 3, 20)); // bob's Ready moved: another bucket
  store_->record(recording("d-1", "alice", base + 86400 * kSecond + kSecond, 2, 0, "Failed"));
  const int64_t until = base + 2 * int64_t{86400} * kSecond;
  std::vector<std::string> groupings = {"", "day", "party", "blamePhase", "day,party"};
  std::vector<json> kept;
  for (const auto& g : groupings)
    kept.push_back(statsJson(store_->stats(base, until, g)));
  EXPECT_EQ(kept[0][0]["tasks"], 6) << kept[0].dump();
  store_->rebuildStats();
  for (std::size_t i = 0; i < groupings.size(); ++i)
    EXPECT_EQ(kept[i], statsJson(store_->stats(base, until, groupings[i])))
        << "grouping '" << groupings[i] << "'";
}

TEST_P(HistoryStoreTest, DocumentsEarlierVersionsPackedAreStillRead) {
  // Earlier versions stored documents and summaries as zlib streams after their size, then as
  // zstd frames; this one writes zstd frames against the built-in dictionary, marked by the
  // size's top bit. Rows of every kind are read.
  int64_t created = at("2024-05-20T08:00:00Z");
  store_->record(recording("z", "alice", created, 5, 7));
  auto before = store_->document("z");
  ASSERT_TRUE(before);
  auto zlibPacked = [](const std::string& text) {
    std::string out(4 + compressBound(text.size()), '\0');
    for (int i = 0; i < 4; ++i)
      out[i] = static_cast<char>(text.size() >> (8 * i) & 0xff);
    uLongf size = out.size() - 4;
    compress2(reinterpret_cast<Bytef*>(out.data() + 4), &size,
              reinterpret_cast<const Bytef*>(text.data()), text.size(), Z_BEST_SPEED);
    out.resize(4 + size);
    return SqlBytes{out};
  };
  auto zstdPacked = [](const std::string& text) { // schema 1's: level 3, no dictionary
    std::string out(4 + ZSTD_compressBound(text.size()), '\0');
    for (int i = 0; i < 4; ++i)
      out[i] = static_cast<char>(text.size() >> (8 * i) & 0xff);
    out.resize(4 + ZSTD_compress(out.data() + 4, out.size() - 4, text.data(), text.size(), 3));
    return SqlBytes{out};
  };
  auto db = GetParam() == "postgresql" ? openPostgres(database_, "") : openSqlite(database_);
  std::string stored, summary;
  db->run("SELECT r.document, t.summary FROM recordings r JOIN tasks t ON t.task = r.task", {},
          [&](const SqlRow& row) {
            stored = row.bytes(0);
            summary = row.bytes(1);
          });
  ASSERT_GE(stored.size(), 8u);
  EXPECT_EQ(stored.substr(4, 4), std::string("\x28\xb5\x2f\xfd")) << "a zstd frame";
  EXPECT_NE(static_cast<unsigned char>(stored[3]) & 0x80, 0) << "against the dictionary";
  EXPECT_NE(static_cast<unsigned char>(summary[3]) & 0x80, 0) << "against the dictionary";
  auto page = store_->list({});
  ASSERT_EQ(page.items.size(), 1u);
  // The same documents as schema 1 wrote them, then as zlib did before: read back alike.
  auto readBack = [&](const std::function<SqlBytes(const std::string&)>& pack) {
    db->run("UPDATE recordings SET document = $1", {pack(before->dump())});
    db->run("UPDATE tasks SET summary = $1", {pack(page.items[0].summary.dump())});
    auto store = reopen();
    auto doc = store->document("z");
    ASSERT_TRUE(doc);
    EXPECT_EQ((*doc)["entries"], (*before)["entries"]);
    EXPECT_EQ(store->list({}).items.at(0).summary, page.items[0].summary);
  };
  readBack(zstdPacked);
  readBack(zlibPacked);
  auto after = reopen();
  // A recording over a zlib row merges with it and writes zstd.
  EXPECT_TRUE(after->record(recording("z", "alice", created, 5, 9)));
  db->run("SELECT document FROM recordings", {}, [&](const SqlRow& row) { stored = row.bytes(0); });
  EXPECT_EQ(stored.substr(4, 4), std::string("\x28\xb5\x2f\xfd"));
  EXPECT_NE(static_cast<unsigned char>(stored[3]) & 0x80, 0);
}

TEST(HistoryApiTest, InstantsAreRfc3339OrDurationsBack) {
  int64_t now = at("2024-11-10T00:00:00Z");
  EXPECT_EQ(parseInstant("7d", now), at("2024-11-03T00:00:00Z"));
  EXPECT_EQ(parseInstant("90m", now), at("2024-11-09T22:30:00Z"));
  EXPECT_EQ(parseInstant("2024-11-01T08:00:00+08:00", now), at("2024-11-01T00:00:00Z"));
  for (const char* bad : {"", "d", "7", "7w", "-7d", "yesterday", "99999999999d"})
    EXPECT_FALSE(parseInstant(bad, now)) << bad;
}

TEST_P(HistoryStoreTest, RetentionAndTheCapPruneInBatches) {
  int64_t base = at("2024-11-01T00:00:00Z");
  for (int i = 0; i < 30; ++i)
    store_->record(recording("p-" + std::to_string(100 + i), "alice", base + i * kSecond, 1, 1));
  // Created before base + 10 s: 10 tasks, in batches of 4.
  EXPECT_EQ(store_->prune(base + 10 * kSecond, 0, 4), 4u);
  EXPECT_EQ(store_->prune(base + 10 * kSecond, 0, 4), 4u);
  EXPECT_EQ(store_->prune(base + 10 * kSecond, 0, 4), 2u);
  EXPECT_EQ(store_->prune(base + 10 * kSecond, 0, 4), 0u);
  EXPECT_EQ(store_->count(), 20u);
  EXPECT_FALSE(store_->document("p-105"));
  EXPECT_TRUE(store_->document("p-110"));
  // At most 15: the 5 oldest go.
  EXPECT_EQ(store_->prune(0, 15, 100), 5u);
  EXPECT_EQ(store_->count(), 15u);
  EXPECT_EQ(store_->list({}).items.back().task, "p-115");
}

// A KusciaJob is kept as last seen, and its view is computed from it and its tasks' history,
// after both are gone from the cluster: the approval the host observed (kept on the job), each
// task's queue behind its dependency.
TEST_P(HistoryStoreTest, AJobIsKeptAndItsViewComesFromItsTasksHistory) {
  const int64_t created = at("2024-05-20T08:00:00Z");
  auto psi = recording("j-psi", "alice", created + 5 * kSecond, 4, 6, "Succeeded");
  psi.document["completionTime"] = "2024-05-20T08:00:15Z";
  store_->record(psi);
  auto train = recording("j-train", "alice", created + 20 * kSecond, 2, 3);
  store_->record(train);
  json object = {
      {"metadata",
       {{"name", "j"},
        {"namespace", "cross-domain"},
        {"creationTimestamp", "2024-05-20T08:00:00Z"},
        {"annotations",
         {{"kuscia-host/observed",
           R"({"v":1,"awaiting":"2024-05-20T08:00:01Z","approved":"2024-05-20T08:00:04Z","accepted":{"bob":"2024-05-20T08:00:04Z"}})"}}}}},
      {"spec",
       {{"initiator", "alice"},
        {"tasks",
         {{{"alias", "psi"},
           {"taskID", "j-psi"},
           {"parties", {{{"domainID", "alice"}}, {{"domainID", "bob"}}}}},
          {{"alias", "train"},
           {"taskID", "j-train"},
           {"dependencies", {"psi"}},
           {"parties", {{{"domainID", "alice"}}, {{"domainID", "bob"}}}}}}}}},
      {"status",
       {{"phase", "Running"},
        {"approveStatus", {{"alice", "JobAccepted"}, {"bob", "JobAccepted"}}}}}};
  store_->recordJobs({{"j", "cross-domain", "Running", created, object}});
  // The latest replaces what was kept.
  object["status"]["phase"] = "Succeeded";
  store_->recordJobs({{"j", "cross-domain", "Succeeded", created, object},
                      {"older", "cross-domain", "Failed", created - kSecond, object}});
  auto other = reopen();
  auto jobs = other->jobs(10);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].job, "j") << "newest first";
  EXPECT_EQ(jobs[0].phase, "Succeeded");
  ASSERT_TRUE(other->job("j"));
  EXPECT_EQ(other->job("j")->object, object);
  EXPECT_FALSE(other->job("nope"));

  sdk::HttpResponse response;
  serveHistory(*other, {"GET", "/api/v1/history/jobs/j", ""}, response, created + 3600 * kSecond);
  ASSERT_EQ(response.status, 200) << response.body;
  const json view = json::parse(response.body);
  EXPECT_EQ(view["approval"]["seconds"], 4.0);
  EXPECT_EQ(view["approval"]["party"], "bob");
  EXPECT_EQ(view["tasks"][0]["task"], "j-psi");
  EXPECT_EQ(view["tasks"][0]["startupSeconds"], 6.0);
  EXPECT_EQ(view["tasks"][0]["queued"]["seconds"], 1.0) << "approved at :04, created at :05";
  EXPECT_EQ(view["tasks"][1]["queued"]["after"], "psi");
  EXPECT_EQ(view["tasks"][1]["queued"]["seconds"], 5.0) << "psi ended at :15, train came at :20";
  serveHistory(*other, {"GET", "/api/v1/history/jobs", "limit=1"}, response, created);
  EXPECT_EQ(json::parse(response.body)["items"].size(), 1u);
  serveHistory(*other, {"GET", "/api/v1/history/jobs/nope", ""}, response, created);
  EXPECT_EQ(response.status, 404);
  // Retention takes the jobs with the tasks.
  other->prune(created, 0, 100);
  EXPECT_EQ(other->jobs(10).size(), 1u) << "the job created before the cut is gone";
}

TEST_P(HistoryStoreTest, ANewerSchemaIsRefusedByName) {
  store_->record(recording("t", "alice", at("2024-05-20T08:00:00Z"), 1, 1));
  store_.reset();
  // What a newer kuscia-host would have left.
  if (GetParam() == "sqlite") {
    std::string cmd = "sqlite3 " + database_ + " 'INSERT INTO schema_migrations VALUES (99, 0)'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  } else {
    postgres().psql("INSERT INTO schema_migrations VALUES (99, 0)", db_);
  }
  try {
    reopen();
    FAIL() << "a newer schema must be refused";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this kuscia-host knows"), std::string::npos)
        << e.what();
    EXPECT_FALSE(e.transient());
  }
}

// A name prefix held by many tasks (more than the store looks up by name: 2,000) is walked along
// the creation index; one held by few, by name. Either way the pages come newest first, each task
// once, and only the tasks with the prefix.
TEST_P(HistoryStoreTest, CommonAndRarePrefixesPageAlike) {
  int64_t base = at("2024-11-01T00:00:00Z");
  std::vector<std::string> common, rare; // newest first
  for (int i = 0; i < 2100; ++i) {
    const bool isRare = i % 70 == 0;
    std::string name = (isRare ? "rare-" : "many-") + std::to_string(i);
    ASSERT_TRUE(store_->record(recording(name, "alice", base + i * kSecond, 1, 1)));
    auto& into = isRare ? rare : common;
    into.insert(into.begin(), name);
  }
  ASSERT_GT(common.size(), 2000u);
  for (const auto& [prefix, expected] : {std::pair{"many-", common}, std::pair{"rare-", rare}}) {
    HistoryQuery q;
    q.prefix = prefix;
    q.limit = 500;
    EXPECT_EQ(names(allPages(q)), expected) << prefix;
  }
}

// An index that changes no version's reads or writes is added when missing, without a new
// schema version: a database an earlier kuscia-host made gets it at the next start, and an
// earlier kuscia-host still opens a database that has it.
TEST_P(HistoryStoreTest, AMissingIndexIsAddedWithoutANewVersion) {
  store_->record(recording("t", "alice", at("2024-05-20T08:00:00Z"), 1, 1));
  store_.reset();
  auto db = GetParam() == "postgresql" ? openPostgres(database_, "") : openSqlite(database_);
  const std::string has =
      GetParam() == "postgresql"
          ? "SELECT count(*) FROM pg_indexes WHERE indexname = 'tasks_by_name'"
          : "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'tasks_by_name'";
  auto count = [&](const std::string& sql) {
    int64_t n = -1;
    db->run(sql, {}, [&](const SqlRow& row) { n = row.integer(0); });
    return n;
  };
  const std::string version = "SELECT max(version) FROM schema_migrations";
  const int64_t known = count(version);
  EXPECT_EQ(count(has), 1);
  db->script("DROP INDEX tasks_by_name"); // as a database of an earlier version has it
  EXPECT_EQ(count(has), 0);
  openStore(database_, "", true)->list({}); // a reader adds nothing
  EXPECT_EQ(count(has), 0);
  auto store = reopen();
  EXPECT_EQ(count(has), 1);
  EXPECT_EQ(count(version), known);
  HistoryQuery q;
  q.prefix = "t";
  EXPECT_EQ(store->list(q).items.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Databases, HistoryStoreTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& p) { return p.param; });

TEST(HistoryStoreSqliteTest, TheFileIsTheOwnersOnlyAndInWalMode) {
  TempDir dir;
  std::string path = dir.path + "/h.db";
  auto s = openStore(path, "");
  s->record(recording("t", "alice", at("2024-05-20T08:00:00Z"), 1, 1));
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string cmd = "sqlite3 " + path + " 'PRAGMA journal_mode' > " + dir.path + "/mode";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(dir.path + "/mode");
  std::string mode;
  in >> mode;
  EXPECT_EQ(mode, "wal");
}

// The plugin through the fake host.
const kh_plugin_v1_t* descriptor() {
  return sdk::pluginDescriptor<TaskHistory>("task-history");
}

TaskHistory& plugin(testing::FakeHost& host) {
  return *sdk::pluginObject<TaskHistory>(host.instance());
}

json pullEvent(const json& pod, const char* reason, const char* time) {
  return {{"metadata", {{"name", std::string("pull-") + reason}, {"namespace", "alice"}}},
          {"involvedObject",
           {{"kind", "Pod"}, {"name", pod["metadata"]["name"]}, {"uid", pod["metadata"]["uid"]}}},
          {"reason", reason},
          {"lastTimestamp", time}};
}

std::string config(const std::string& database) {
  return json{{"database", database}, {"recordDelaySeconds", 1}}.dump();
}

// Pod and Event events are kept as they come and read together at the tick, in the order they
// came: a pod's facts that came before its task's deletion are in the task's last recording, and
// the recording is due from when the fact came, not from when it was read.
TEST(TaskHistoryTest, PodEventsAreReadAtTheTickInTheirOrder) {
  TempDir dir;
  testing::FakeHost host("alice");
  host.setWallTimeNanos(at("2024-05-20T08:00:30Z"));
  ASSERT_TRUE(host.create(descriptor(), config(dir.path + "/history.db"))) << host.error();
  ASSERT_TRUE(host.start());
  test::synced(host);
  json pod = fixture("pod.json");
  json task = test::readyTask();
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  host.advanceMillis(2000);
  plugin(host).flush(std::chrono::seconds(10));
  ASSERT_EQ(plugin(host).counters().written, 1u) << "the task, before its pod's facts";
  deliver(host, "pods", KH_EVENT_ADDED, pod);
  deliver(host, "events", KH_EVENT_ADDED, pullEvent(pod, "Pulling", "2024-05-20T08:00:03Z"));
  deliver(host, "events", KH_EVENT_ADDED, pullEvent(pod, "Pulled", "2024-05-20T08:00:06Z"));
  deliver(host, "events", KH_EVENT_DELETED, pullEvent(pod, "Pulled", "2024-05-20T08:00:06Z"));
  EXPECT_EQ(plugin(host).pendingEvents(), 3u) << "an Event's deletion tells nothing";
  EXPECT_EQ(plugin(host).heldPods(), 0u) << "read at the tick";
  EXPECT_EQ(plugin(host).dueTasks(), 0u);
  // Kuscia deletes the pod, then the task, within the second.
  deliver(host, "pods", KH_EVENT_DELETED, pod);
  deliver(host, "kusciatasks", KH_EVENT_DELETED, task);
  EXPECT_EQ(plugin(host).pendingEvents(), 0u) << "read before the task's last recording";
  EXPECT_EQ(plugin(host).heldPods(), 0u) << "nothing of a gone task is held";
  plugin(host).flush(std::chrono::seconds(10));
  EXPECT_EQ(plugin(host).counters().written, 2u);
  auto one = host.httpGet("/api/v1/history/secretflow-task-psi");
  ASSERT_EQ(one.status, 200) << one.body;
  const json entry = json::parse(one.body)["entries"]["alice/secretflow-task-psi-0"];
  EXPECT_EQ(entry["times"]["imagePullStartTime"], "2024-05-20T08:00:03Z");
  EXPECT_EQ(entry["times"]["imagePullEndTime"], "2024-05-20T08:00:06Z");

  // A pod's fact read at the tick makes its task due from when the fact came.
  task["metadata"]["name"] = "t2";
  pod["metadata"]["annotations"]["kuscia.secretflow/task-id"] = "t2";
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  host.advanceMillis(2000);
  plugin(host).flush(std::chrono::seconds(10));
  ASSERT_EQ(plugin(host).counters().written, 3u);
  host.advanceMillis(500); // half a tick before the next
  const int64_t came = host.wallTimeNanos();
  deliver(host, "pods", KH_EVENT_ADDED, pod);
  host.advanceMillis(500); // the tick reads it
  EXPECT_EQ(plugin(host).pendingEvents(), 0u);
  EXPECT_EQ(plugin(host).dueTasks(), 1u);
  EXPECT_EQ(plugin(host).dueAt("t2"), came + kSecond) << "recordDelaySeconds after it came";
}

TEST(TaskHistoryTest, ATaskIsServedAfterItAndItsPodsAreGone) {
  TempDir dir;
  std::string db = dir.path + "/history.db";
  testing::FakeHost host("alice");
  host.setWallTimeNanos(at("2024-05-20T08:00:30Z"));
  ASSERT_TRUE(host.create(descriptor(), config(db))) << host.error();
  ASSERT_TRUE(host.start());
  test::synced(host);
  json pod = fixture("pod.json");
  json task = test::readyTask();
  deliver(host, "pods", KH_EVENT_ADDED, pod);
  deliver(host, "events", KH_EVENT_ADDED, pullEvent(pod, "Pulling", "2024-05-20T08:00:03Z"));
  deliver(host, "events", KH_EVENT_ADDED, pullEvent(pod, "Pulled", "2024-05-20T08:00:06Z"));
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  EXPECT_EQ(plugin(host).dueTasks(), 1u);
  host.advanceMillis(2000); // past recordDelaySeconds: queued
  EXPECT_EQ(plugin(host).dueTasks(), 0u);
  plugin(host).flush(std::chrono::seconds(10));
  EXPECT_EQ(plugin(host).counters().written, 1u);
  EXPECT_EQ(host.metric("kuscia_history_recordings_total", "written"), 1);
  // Finished and recorded as it is now: the host may forget it (ABI 1.3), not before.
  const uint64_t taskSub = test::subscription(host, "kusciatasks").id;
  const std::string taskKey = "cross-domain/secretflow-task-psi";
  EXPECT_FALSE(host.released(taskSub, taskKey)) << "not finished yet";
  task["status"]["phase"] = "Succeeded";
  task["metadata"]["resourceVersion"] = "999";
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, task);
  EXPECT_FALSE(host.released(taskSub, taskKey)) << "not recorded finished yet";
  host.advanceMillis(2000);
  plugin(host).flush(std::chrono::seconds(10));
  EXPECT_EQ(plugin(host).counters().written, 2u);
  ASSERT_EQ(host.releases().size(), 1u);
  EXPECT_EQ(host.releases()[0].key, taskKey);
  EXPECT_EQ(host.releases()[0].resourceVersion, "999");
  // Kuscia deletes the pod at once and the task later: what was recorded stays.
  deliver(host, "pods", KH_EVENT_DELETED, pod);
  deliver(host, "kusciatasks", KH_EVENT_DELETED, task);
  host.advanceMillis(1000);
  EXPECT_EQ(plugin(host).heldPods(), 0u) << "nothing of a gone task is held";
  EXPECT_EQ(plugin(host).dueTasks(), 0u);
  auto list = host.httpGet("/api/v1/history");
  ASSERT_EQ(list.status, 200) << list.body;
  json items = json::parse(list.body)["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["task"], "secretflow-task-psi");
  EXPECT_EQ(items[0]["createTime"], "2024-05-20T07:59:58Z");
  EXPECT_TRUE(items[0]["summary"]["complete"].get<bool>());
  auto one = host.httpGet("/api/v1/history/secretflow-task-psi");
  ASSERT_EQ(one.status, 200) << one.body;
  json doc = json::parse(one.body);
  const json& entry = doc["entries"]["alice/secretflow-task-psi-0"];
  EXPECT_EQ(entry["times"]["imagePullStartTime"], "2024-05-20T08:00:03Z");
  EXPECT_EQ(entry["times"]["imagePullEndTime"], "2024-05-20T08:00:06Z");
  EXPECT_EQ(entry["times"]["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(entry["uid"], pod["metadata"]["uid"]) << "this domain's pod, by its UID";
  EXPECT_EQ(doc["uid"], task["metadata"]["uid"]);
  EXPECT_FALSE(entry["phases"].empty());
  EXPECT_EQ(doc["entries"].size(),
            task["status"]["podStatuses"].size() + task["status"]["serviceStatuses"].size());
  EXPECT_EQ(host.httpGet("/api/v1/history/other-task").status, 404);
  EXPECT_EQ(host.httpGet("/api/v1/history", "limit=0").status, 400);
  EXPECT_EQ(host.httpGet("/api/v1/history", "since=yesterday").status, 400);
  EXPECT_EQ(host.httpGet("/api/v1/history", "colour=red").status, 400);
  EXPECT_EQ(host.httpGet("/api/v1/history", "since=3650d&party=alice&phase=Running").status, 200);
  auto stats = host.httpGet("/api/v1/history/stats", "since=3650d&groupBy=party");
  ASSERT_EQ(stats.status, 200) << stats.body;
  EXPECT_EQ(json::parse(stats.body)["groups"].size(), 2u);

  // A restarted host: the task is back in the cache (say its deletion was not yet done), the
  // pod and its Events are gone. It writes nothing new and loses no fact.
  host.stop();
  testing::FakeHost again("alice");
  again.setWallTimeNanos(at("2024-05-20T09:00:00Z"));
  ASSERT_TRUE(again.create(descriptor(), config(db))) << again.error();
  ASSERT_TRUE(again.start());
  deliver(again, "kusciatasks", KH_EVENT_ADDED, task);
  EXPECT_EQ(plugin(again).dueTasks(), 0u) << "the initial list is looked at by the resync";
  test::synced(again);
  EXPECT_EQ(plugin(again).resyncLeft(), 1u);
  again.advanceMillis(1000);
  plugin(again).flush(std::chrono::seconds(10));
  EXPECT_EQ(plugin(again).counters().unchanged, 1u);
  EXPECT_EQ(plugin(again).counters().written, 0u);
  json still = json::parse(again.httpGet("/api/v1/history/secretflow-task-psi").body);
  EXPECT_EQ(still["entries"]["alice/secretflow-task-psi-0"]["times"]["imagePullEndTime"],
            "2024-05-20T08:00:06Z");
}

// p2p, alice's host alone: her cluster's status holds her own entries, and the stub
// TaskResource it keeps of bob says when bob reserved. alice's pod waited for him (its
// awaiting-parties): the history blames bob's reserving and its document keeps his reservation,
// after the stub is gone as well.
TEST(TaskHistoryTest, APartnersReservationThatHeldTheTaskIsInItsHistory) {
  TempDir dir;
  testing::FakeHost host("alice");
  host.setWallTimeNanos(at("2024-05-20T08:00:30Z"));
  ASSERT_TRUE(host.create(descriptor(), config(dir.path + "/history.db"))) << host.error();
  ASSERT_TRUE(host.start());
  test::synced(host);
  json task = test::readyTask();
  task["status"]["podStatuses"].erase("bob/secretflow-task-psi-0");
  task["status"]["serviceStatuses"] = json::object();
  json& pod = task["status"]["podStatuses"]["alice/secretflow-task-psi-0"];
  pod["scheduleTime"] = "2024-05-20T08:00:06Z";
  pod["startTime"] = "2024-05-20T08:00:07Z";
  auto reservation = [](const char* party, const char* reserved) {
    json tr = {{"metadata",
                {{"namespace", party},
                 {"name", std::string("secretflow-task-psi-") + party},
                 {"annotations", {{"kuscia.secretflow/task-id", "secretflow-task-psi"}}}}},
               {"status",
                {{"phase", "Schedulable"},
                 {"startTime", "2024-05-20T08:00:00Z"},
                 {"conditions",
                  {{{"type", "Reserved"}, {"status", "True"}, {"lastTransitionTime", reserved}},
                   {{"type", "Schedulable"},
                    {"status", "True"},
                    {"lastTransitionTime", "2024-05-20T08:00:06Z"}}}}}}};
    return tr;
  };
  // The TaskResources of every namespace: the stubs are in the partners'.
  EXPECT_EQ(test::subscription(host, "taskresources").scope, KH_SCOPE_ALL);
  deliver(host, "taskresources", KH_EVENT_ADDED, reservation("alice", "2024-05-20T08:00:00Z"));
  const json bob = reservation("bob", "2024-05-20T08:00:06Z");
  deliver(host, "taskresources", KH_EVENT_ADDED, bob);
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  host.advanceMillis(2000);
  plugin(host).flush(std::chrono::seconds(10));
  auto blamed = [&host] {
    json items = json::parse(host.httpGet("/api/v1/history").body)["items"];
    return items.size() == 1 ? items[0]["summary"]["blame"] : json();
  };
  EXPECT_EQ(blamed()["party"], "bob");
  EXPECT_EQ(blamed()["phase"], "reserving");
  EXPECT_EQ(blamed()["entry"], "bob/secretflow-task-psi-bob");
  json doc = json::parse(host.httpGet("/api/v1/history/secretflow-task-psi").body);
  EXPECT_EQ(doc["partnerReservations"]["bob"]["reservedTime"], "2024-05-20T08:00:06Z");
  EXPECT_FALSE(doc["entries"].contains("bob/secretflow-task-psi-bob")) << "no entry of bob's";
  // The task succeeds, Kuscia deletes the TaskResources: the answer stays.
  deliver(host, "taskresources", KH_EVENT_DELETED, bob);
  task["status"]["phase"] = "Succeeded";
  task["metadata"]["resourceVersion"] = "999";
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, task);
  host.advanceMillis(2000);
  plugin(host).flush(std::chrono::seconds(10));
  EXPECT_EQ(plugin(host).counters().written, 2U);
  EXPECT_EQ(blamed()["party"], "bob");
  doc = json::parse(host.httpGet("/api/v1/history/secretflow-task-psi").body);
  EXPECT_EQ(doc["partnerReservations"]["bob"]["taskResource"], "bob/secretflow-task-psi-bob");
}

TEST(TaskHistoryTest, ATaskOfOtherPartiesIsNotRecorded) {
  TempDir dir;
  testing::FakeHost host("carol");
  ASSERT_TRUE(host.create(descriptor(), config(dir.path + "/h.db"))) << host.error();
  ASSERT_TRUE(host.start());
  test::synced(host);
  deliver(host, "kusciatasks", KH_EVENT_ADDED, test::readyTask());
  host.advanceMillis(2000);
  plugin(host).flush(std::chrono::seconds(10));
  EXPECT_EQ(plugin(host).counters().written, 0u);
  EXPECT_EQ(json::parse(host.httpGet("/api/v1/history").body)["items"].size(), 0u);
  // Finished, it is not this domain's to keep either.
  json done = test::readyTask();
  done["status"]["phase"] = "Failed";
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, done);
  host.advanceMillis(2000);
  EXPECT_TRUE(host.released(test::subscription(host, "kusciatasks").id,
                            "cross-domain/secretflow-task-psi"));
}

// True once pred holds, false after 10 s.
template <class Pred> bool waitFor(Pred pred) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A real store that notes each transaction: how many recordings of each of its tasks.
using Noted = std::vector<std::vector<std::size_t>>;
class NotingStore final : public HistoryStore {
public:
  // `refuse`: a task it refuses for good, as a store refuses what it cannot take.
  NotingStore(std::unique_ptr<HistoryStore> store, std::shared_ptr<Noted> noted,
              std::shared_ptr<std::mutex> mu, std::string refuse = {})
      : store_(std::move(store)), noted_(std::move(noted)), mu_(std::move(mu)),
        refuse_(std::move(refuse)) {}
  std::vector<std::vector<bool>>
  recordTasks(const std::vector<std::vector<const Recording*>>& tasks) override {
    {
      std::lock_guard lock(*mu_);
      auto& sizes = noted_->emplace_back();
      for (const auto& rs : tasks)
        sizes.push_back(rs.size());
    }
    for (const auto& rs : tasks)
      if (!refuse_.empty() && rs.front()->task == refuse_)
        throw StoreError("refused " + refuse_, false);
    return store_->recordTasks(tasks);
  }
  HistoryPage list(const HistoryQuery& q) override { return store_->list(q); }
  std::optional<json> document(const std::string& task) override { return store_->document(task); }
  std::vector<StatsGroup> stats(int64_t since, int64_t until, const std::string& g) override {
    return store_->stats(since, until, g);
  }
  std::size_t prune(int64_t before, std::size_t maxTasks, std::size_t batch) override {
    return store_->prune(before, maxTasks, batch);
  }
  std::size_t count() override { return store_->count(); }
  void recordJobs(const std::vector<JobRecord>& jobs) override { store_->recordJobs(jobs); }
  std::vector<JobRecord> jobs(std::size_t limit, bool withObjects) override {
    return store_->jobs(limit, withObjects);
  }
  std::optional<JobRecord> job(const std::string& name) override { return store_->job(name); }
  void rebuildStats() override { store_->rebuildStats(); }
  std::string describe() const override { return store_->describe(); }

private:
  std::unique_ptr<HistoryStore> store_;
  std::shared_ptr<Noted> noted_;
  std::shared_ptr<std::mutex> mu_;
  std::string refuse_;
};

// The transactions the stores it opens took, noted across the writer's reconnections.
struct Noting {
  std::shared_ptr<Noted> noted = std::make_shared<Noted>();
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
  Noted batches() const {
    std::lock_guard lock(*mu);
    return *noted;
  }
  void clear() {
    std::lock_guard lock(*mu);
    noted->clear();
  }
  std::unique_ptr<HistoryStore> open(const std::string& db, std::string refuse = {}) const {
    return std::make_unique<NotingStore>(openStore(db, ""), noted, mu, std::move(refuse));
  }
};

// One writer serves the instances recording into one database (a centralized host's domains):
// a task's recordings by two domains are written in one transaction; a recording waits for the
// other users' only while one is attached that has not queued its own, and at most `gather`.
TEST(HistoryWriterTest, ATasksRecordingsByTwoDomainsAreWrittenTogether) {
  TempDir dir;
  const std::string db = dir.path + "/history.db";
  Noting noting;
  auto batches = [&] { return noting.batches(); };
  auto open = [&] { return noting.open(db); };
  auto clock = [] { return at("2024-05-20T09:00:00Z"); };
  const int64_t created = at("2024-05-20T08:00:00Z");
  auto waitWritten = [](HistoryWriter& w, HistoryWriter::User u, uint64_t n) {
    return waitFor([&] { return w.snapshot(u).written >= n; });
  };
  {
    HistoryWriter::Options o;
    o.gather = std::chrono::hours(1); // longer than any wait below: only the users end it
    HistoryWriter w(open, o);
    auto alice = w.attach(clock), bob = w.attach(clock);
    ASSERT_TRUE(w.enqueue(alice, recording("t1", "alice", created, 5, 0)));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(batches().empty()) << "alice's waits for bob's";
    EXPECT_EQ(w.snapshot(alice).depth, 1u);
    ASSERT_TRUE(w.enqueue(bob, recording("t1", "bob", created, 5, 9)));
    ASSERT_TRUE(waitWritten(w, alice, 1) && waitWritten(w, bob, 1));
    EXPECT_EQ(batches(), (Noted{{2}})) << "one transaction for both";
    EXPECT_EQ(w.snapshot(alice).depth, 0u);
    EXPECT_EQ(w.snapshot(bob).written, 1u) << "each user counts its own";
    // Bob records nothing of t2: alice's waits until bob is gone, then goes alone. A task both
    // record, queued behind it, does not wait for its turn.
    ASSERT_TRUE(w.enqueue(alice, recording("t2", "alice", created, 5, 0)));
    ASSERT_TRUE(w.enqueue(alice, recording("t5", "alice", created, 5, 0)));
    ASSERT_TRUE(w.enqueue(bob, recording("t5", "bob", created, 5, 9)));
    ASSERT_TRUE(waitWritten(w, bob, 2)) << "t5 waits for nothing";
    EXPECT_EQ(batches(), (Noted{{2}, {2}}));
    EXPECT_EQ(w.snapshot(alice).depth, 1u) << "t2 still waits for bob's";
    w.detach(bob);
    ASSERT_TRUE(waitWritten(w, alice, 3));
    ASSERT_TRUE(w.enqueue(alice, recording("t3", "alice", created, 5, 0)));
    ASSERT_TRUE(waitWritten(w, alice, 4)) << "the only user waits for no one";
    EXPECT_EQ(batches(), (Noted{{2}, {2}, {1}, {1}}));
    w.detach(alice);
  }
  {
    HistoryWriter::Options o;
    o.gather = std::chrono::milliseconds(100);
    HistoryWriter w(open, o);
    auto alice = w.attach(clock);
    w.attach(clock); // bob, who records nothing
    ASSERT_TRUE(w.enqueue(alice, recording("t4", "alice", created, 5, 0)));
    ASSERT_TRUE(waitWritten(w, alice, 1)) << "a recording waits at most `gather`";
  }
  auto store = openStore(db, "");
  EXPECT_EQ(store->count(), 5u);
  EXPECT_TRUE(store->list({}).items.back().summary["complete"].get<bool>())
      << "t1, both parties ready";
}

// Tasks ready together are written together: the writer lingers after the first is ready, takes
// at most `batch` tasks a transaction, and a task the store refuses for good is dropped alone.
// The day's statistics come out as if each task had been written by itself.
TEST(HistoryWriterTest, ReadyTasksShareATransaction) {
  TempDir dir;
  const std::string db = dir.path + "/history.db";
  Noting noting;
  auto batches = [&] { return noting.batches(); };
  auto open = [&] { return noting.open(db, "bad"); };
  auto clock = [] { return at("2024-05-20T09:00:00Z"); };
  const int64_t created = at("2024-05-20T08:00:00Z");
  HistoryWriter::Options o;
  o.batch = 3;
  o.linger = std::chrono::milliseconds(300);
  HistoryWriter w(open, o);
  auto alice = w.attach(clock), bob = w.attach(clock);
  for (int i = 0; i < 4; ++i) {
    std::string task = "t" + std::to_string(i);
    ASSERT_TRUE(w.enqueue(alice, recording(task, "alice", created, 5, 0)));
    ASSERT_TRUE(w.enqueue(bob, recording(task, "bob", created, 5, 8 + i)));
  }
  ASSERT_TRUE(waitFor([&] { return w.snapshot(alice).written == 4; }));
  EXPECT_EQ(batches(), (Noted{{2, 2, 2}, {2}})) << "three tasks, then the fourth";
  // A task refused for good costs only its own recordings; the others of its batch are written.
  noting.clear();
  for (const char* task : {"t4", "bad", "t5"}) {
    ASSERT_TRUE(w.enqueue(alice, recording(task, "alice", created, 5, 0)));
    ASSERT_TRUE(w.enqueue(bob, recording(task, "bob", created, 5, 9)));
  }
  ASSERT_TRUE(waitFor([&] { return w.snapshot(alice).written == 6; }));
  EXPECT_EQ(batches(), (Noted{{2, 2, 2}, {2}, {2}, {2}})) << "the batch, then each alone";
  EXPECT_EQ(w.snapshot(alice).failures, 1u);
  EXPECT_EQ(w.snapshot(alice).depth, 0u);
  EXPECT_FALSE(w.snapshot(alice).failing) << "the others were written";
  w.detach(alice);
  w.detach(bob);

  // The same tasks written one by one into another database: the same statistics.
  const std::string apart = dir.path + "/apart.db";
  {
    auto store = openStore(apart, "");
    for (const char* task : {"t0", "t1", "t2", "t3", "t4", "t5"}) {
      int i = task[1] - '0';
      Recording a = recording(task, "alice", created, 5, 0);
      Recording b = recording(task, "bob", created, 5, i < 4 ? 8 + i : 9);
      store->recordTogether({&a, &b});
    }
  }
  auto together = openStore(db, ""), alone = openStore(apart, "");
  EXPECT_EQ(together->count(), 6u);
  for (const char* groupBy : {"", "party", "blamePhase", "day"}) {
    auto x = together->stats(created - 86400 * kSecond, created + 86400 * kSecond, groupBy);
    auto y = alone->stats(created - 86400 * kSecond, created + 86400 * kSecond, groupBy);
    ASSERT_EQ(x.size(), y.size()) << groupBy;
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].key, y[i].key);
      EXPECT_EQ(x[i].tasks, y[i].tasks) << groupBy << " " << x[i].key;
      EXPECT_EQ(x[i].complete, y[i].complete);
      EXPECT_EQ(x[i].p50, y[i].p50);
      EXPECT_EQ(x[i].phaseSeconds, y[i].phaseSeconds);
    }
  }
}

// Two domains of one host recording into one database share the writer: each instance counts
// its own recordings, and the task holds both parties' entries.
// The entries of each recorder's stored recording (SQLite; documents as zstd frames against the
// built-in dictionary, after their size with its top bit set).
std::map<std::string, std::set<std::string>> recordedEntries(const std::string& database) {
  std::map<std::string, std::set<std::string>> out;
  openSqlite(database)->run(
      "SELECT recorder, document FROM recordings", {}, [&](const SqlRow& row) {
        std::string packed = row.bytes(1);
        uint32_t size = 0;
        for (int i = 0; i < 4; ++i)
          size |= uint32_t{static_cast<unsigned char>(packed[i])} << (8 * i);
        EXPECT_NE(size & 0x80000000u, 0u) << "packed against the dictionary";
        size &= 0x7fffffffu;
        std::string text(size, '\0');
        ZSTD_DCtx* ctx = ZSTD_createDCtx();
        std::size_t got =
            ZSTD_decompress_usingDict(ctx, text.data(), size, packed.data() + 4, packed.size() - 4,
                                      packDictionary1().data(), packDictionary1().size());
        ZSTD_freeDCtx(ctx);
        EXPECT_EQ(got, size);
        json doc = json::parse(text);
        auto& entries = out[row.text(0)];
        for (const auto& [key, e] : doc["entries"].items())
          entries.insert(key);
      });
  return out;
}

TEST(TaskHistoryTest, TheDomainsOfOneHostShareTheWriter) {
  TempDir dir;
  std::string db = dir.path + "/history.db";
  testing::FakeHost alice("alice"), bob("bob");
  bob.shareLibraryStates(alice); // one host
  for (auto* h : {&alice, &bob}) {
    h->setWallTimeNanos(at("2024-05-20T08:00:30Z"));
    ASSERT_TRUE(h->create(descriptor(), config(db))) << h->error();
    ASSERT_TRUE(h->start());
    test::synced(*h);
  }
  EXPECT_EQ(&plugin(alice).writer(), &plugin(bob).writer());
  testing::FakeHost carol("carol"); // other settings: a writer of its own
  carol.shareLibraryStates(alice);
  ASSERT_TRUE(carol.create(descriptor(), json{{"database", db}, {"retentionDays", 30}}.dump()))
      << carol.error();
  EXPECT_NE(&plugin(carol).writer(), &plugin(alice).writer());
  {
    testing::FakeHost other("alice"); // another host in this process: its own writer
    ASSERT_TRUE(other.create(descriptor(), config(db))) << other.error();
    EXPECT_NE(&plugin(other).writer(), &plugin(alice).writer());
  }
  json task = test::readyTask();
  task["status"]["podStatuses"]["bob/secretflow-task-psi-0"] =
      task["status"]["podStatuses"]["alice/secretflow-task-psi-0"];
  // A third party that records nothing here.
  task["status"]["podStatuses"]["carol/secretflow-task-psi-0"] =
      task["status"]["podStatuses"]["alice/secretflow-task-psi-0"];
  for (auto* h : {&alice, &bob}) {
    deliver(*h, "kusciatasks", KH_EVENT_ADDED, task);
    h->advanceMillis(2000);
  }
  ASSERT_TRUE(waitFor([&] {
    return plugin(alice).counters().written == 1 && plugin(bob).counters().written == 1;
  }));
  alice.advanceMillis(1000); // the metrics follow the counters at every tick
  bob.advanceMillis(1000);
  EXPECT_EQ(alice.metric("kuscia_history_recordings_total", "written"), 1);
  EXPECT_EQ(bob.metric("kuscia_history_recordings_total", "written"), 1);
  json doc = json::parse(alice.httpGet("/api/v1/history/secretflow-task-psi").body);
  EXPECT_TRUE(doc["entries"].contains("alice/secretflow-task-psi-0"));
  EXPECT_TRUE(doc["entries"].contains("bob/secretflow-task-psi-0"));
  // Each domain's recording holds its own entries and those of carol, whom nothing here records:
  // not the other domain's, which that domain's recording holds.
  std::map<std::string, std::set<std::string>> held = recordedEntries(db);
  ASSERT_EQ(held.size(), 2u);
  std::set<std::string> all;
  for (const auto& [key, e] : doc["entries"].items())
    all.insert(key);
  for (const auto& [recorder, entries] : held) {
    std::set<std::string> want;
    for (const std::string& key : all)
      if (std::string other = recorder == "alice" ? "bob/" : "alice/"; key.rfind(other, 0) != 0)
        want.insert(key);
    EXPECT_EQ(entries, want) << recorder;
  }
  // Alice's host stops; bob's instance still records through the writer they shared.
  alice.stop();
  task["status"]["phase"] = "Succeeded";
  deliver(bob, "kusciatasks", KH_EVENT_MODIFIED, task);
  bob.advanceMillis(2000);
  ASSERT_TRUE(waitFor([&] { return plugin(bob).counters().written == 2; }));
}

TEST(TaskHistoryTest, ADatabaseThatIsDownLosesNothingTheQueueHolds) {
  TempDir dir;
  std::string where = dir.path + "/later";
  testing::FakeHost host("alice");
  ASSERT_TRUE(host.create(descriptor(), config(where + "/history.db"))) << host.error();
  ASSERT_TRUE(host.start());
  test::synced(host);
  deliver(host, "kusciatasks", KH_EVENT_ADDED, test::readyTask());
  host.advanceMillis(2000);
  plugin(host).flush(std::chrono::milliseconds(300));
  auto c = plugin(host).counters();
  EXPECT_TRUE(c.failing);
  EXPECT_GE(c.failures, 1u);
  EXPECT_EQ(c.depth, 1u) << "kept at the head of the queue";
  EXPECT_GE(host.metric("kuscia_history_write_failures_total"), 1);
  EXPECT_EQ(host.metric("kuscia_history_queue_depth"), 1);
  EXPECT_TRUE(host.logged("recording task history fails"));
  EXPECT_EQ(host.httpGet("/api/v1/history").status, 503);
  std::filesystem::create_directory(where); // the disk is back
  for (int i = 0; i < 400 && plugin(host).counters().written == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  host.advanceMillis(1000);
  EXPECT_EQ(plugin(host).counters().written, 1u);
  EXPECT_FALSE(plugin(host).counters().failing);
  EXPECT_TRUE(host.logged("recording task history works again"));
  EXPECT_EQ(json::parse(host.httpGet("/api/v1/history").body)["items"].size(), 1u);
}

// The admin API's reader answers on its own thread (the routes defer their answers, ABI 1.4):
// requests wait in order while one query runs, those over the limit are answered 503 at once,
// and a reader stopped while requests wait answers them 503.
TEST(HistoryReaderTest, AnswersInOrderAndRefusesWhatItCannotHold) {
  struct Answers {
    std::mutex mu;
    std::vector<std::pair<int, std::string>> got; // status, body#handle, in arrival order
    std::size_t size() {
      std::lock_guard lock(mu);
      return got.size();
    }
  };
  static Answers answers;
  kh_host_api_v1_t api{};
  api.struct_size = sizeof api;
  api.http_respond = [](kh_http_response_t* h, int32_t status, const char*, const char* body,
                        size_t len) {
    std::lock_guard lock(answers.mu);
    answers.got.emplace_back(status, std::string(body, len) + "#" +
                                         std::to_string(reinterpret_cast<std::uintptr_t>(h)));
  };
  auto later = [&api](std::uintptr_t n) {
    return sdk::DeferredResponse(&api, reinterpret_cast<kh_http_response_t*>(n));
  };
  TempDir dir;
  const std::string database = dir.path + "/history.db";
  openStore(database, "")->record(recording("t1", "alice", 1716192000 * kSecond, 5, 8));
  // Opening the store waits until the test lets it go: the first query runs meanwhile.
  std::atomic<bool> letGo{false};
  std::atomic<int> opens{0};
  auto open = [&] {
    opens.fetch_add(1);
    while (!letGo.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return openStore(database, "", true);
  };
  auto now = [] { return int64_t{1716192100} * kSecond; };
  {
    HistoryReader reader(open, now, 2);
    reader.submit({"GET", "/api/v1/history/t1", ""}, later(1));
    ASSERT_TRUE(waitFor([&] { return opens.load() == 1; }));
    reader.submit({"GET", "/api/v1/history", ""}, later(2));
    reader.submit({"GET", "/api/v1/history/nope", ""}, later(3));
    reader.submit({"GET", "/api/v1/history", ""}, later(4)); // two wait already
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_EQ(answers.got[0].first, 503);
    EXPECT_NE(answers.got[0].second.find("answering 2 requests already"), std::string::npos);
    EXPECT_NE(answers.got[0].second.find("#4"), std::string::npos);
    letGo = true;
    ASSERT_TRUE(waitFor([&] { return answers.size() == 4; }));
    EXPECT_EQ(answers.got[1].first, 200);
    EXPECT_NE(answers.got[1].second.find("#1"), std::string::npos);
    EXPECT_EQ(answers.got[2].first, 200);
    EXPECT_NE(answers.got[2].second.find("\"t1\""), std::string::npos);
    EXPECT_NE(answers.got[2].second.find("#2"), std::string::npos);
    EXPECT_EQ(answers.got[3].first, 404);
    EXPECT_NE(answers.got[3].second.find("#3"), std::string::npos);
    EXPECT_EQ(opens.load(), 1); // one connection answers every request
  }
  answers.got.clear();
  letGo = false;
  opens = 0;
  auto reader = std::make_unique<HistoryReader>(open, now, 2);
  reader->submit({"GET", "/api/v1/history/t1", ""}, later(5));
  ASSERT_TRUE(waitFor([&] { return opens.load() == 1; }));
  reader->submit({"GET", "/api/v1/history/t1", ""}, later(6));
  // Only the stopping reader can answer the waiting request while the query runs; the query
  // then finishes and is answered too.
  std::thread release([&] {
    EXPECT_TRUE(waitFor([&] { return answers.size() == 1; }));
    letGo = true;
  });
  reader.reset();
  release.join();
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers.got[0].first, 503);
  EXPECT_NE(answers.got[0].second.find("task-history is stopping"), std::string::npos);
  EXPECT_NE(answers.got[0].second.find("#6"), std::string::npos);
  EXPECT_EQ(answers.got[1].first, 200);
  EXPECT_NE(answers.got[1].second.find("#5"), std::string::npos);
}

TEST(TaskHistoryTest, ConfigErrorsNameTheKey) {
  auto error = [](const std::string& cfg) {
    testing::FakeHost host("alice");
    EXPECT_FALSE(host.create(descriptor(), cfg));
    return host.error();
  };
  EXPECT_NE(error(R"({"retentionDays": 0})").find("retentionDays"), std::string::npos);
  EXPECT_NE(error(R"({"database": ""})").find("database"), std::string::npos);
  EXPECT_NE(error(R"({"passwordFile": "/nonexistent/pw"})").find("passwordFile"),
            std::string::npos);
  EXPECT_NE(error(R"({"databse": "x"})").find("databse"), std::string::npos);
}

} // namespace
} // namespace kuscia_host::plugins::history
