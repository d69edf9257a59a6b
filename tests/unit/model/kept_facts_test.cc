// The facts kept on a KusciaTask (kuscia_model/kept_facts.h): bounded user data, the incarnation
// they are of, the size bound a task of 20 parties and 60 pods must fit, and a task object read
// back with them as the command line reads it.
#include <kuscia_model/kept_facts.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace kuscia_host::model {
namespace {

using nlohmann::json;

TEST(KeptFactsTest, MessagesAreBoundedAtACharacterWithoutControlCharacters) {
  EXPECT_EQ(boundedText("pull\tfailed\n\x1b[31mred\x7f", 100), "pull\tfailed\n[31mred");
  EXPECT_EQ(boundedText("abcdef", 6), "abcdef");
  EXPECT_EQ(boundedText("abcdefg", 6), "abc...");
  // "é" is two bytes: a cut never splits it.
  std::string cut = boundedText("ab\xc3\xa9\xc3\xa9\xc3\xa9", 7);
  EXPECT_EQ(cut, "ab\xc3\xa9...");
  EXPECT_EQ(boundedText("ab\xc3\xa9\xc3\xa9\xc3\xa9", 8), "ab\xc3\xa9\xc3\xa9\xc3\xa9"); // fits
  EXPECT_TRUE(json(cut).dump().size() > 0); // valid UTF-8: it serializes
  EXPECT_EQ(boundedText(std::string(10000, 'x'), kKeptMessageBytes).size(), kKeptMessageBytes);
}

json podFacts(int i) {
  std::string message = "Successfully pulled image \"secretflow/secretflow-lite-anolis8:1.11.0b1\" "
                        "in 8.123s (8.123s including waiting). Image size: 1234567 bytes. " +
                        std::string(200, 'x') + std::to_string(i);
  return {{"firstReadyTime", "2024-05-20T08:00:30Z"},
          {"containersStartTime", "2024-05-20T08:00:20Z"},
          {"imagePullStartTime", "2024-05-20T08:00:10Z"},
          {"imagePullEndTime", "2024-05-20T08:00:18.123Z"},
          {"waiting", {{"phase", "ready"}}}, // what it waits for now: not a fact to keep
          {"reasons",
           {{"pulling", {{"reason", "Pulled"}, {"message", message}}},
            {"scheduling", {{"reason", "Scheduled"}, {"message", message}}},
            {"starting", {{"reason", "Started"}, {"message", message}}},
            {"readiness", {{"reason", "Unhealthy"}, {"message", message}}}}}};
}

TEST(KeptFactsTest, TwentyPartiesOfThreePodsFitWithEveryMessageBounded) {
  json entries = json::object();
  for (int party = 0; party < 20; ++party)
    for (int pod = 0; pod < 3; ++pod)
      entries["party-" + std::to_string(party) + "/task-" + std::to_string(pod)] =
          keptFactsOf(podFacts(pod), "2024-05-20T08:00:00Z");
  auto text = keptFactsText(entries);
  ASSERT_TRUE(text);
  EXPECT_LE(text->size(), kKeptFactsBytes);
  json back = keptEntries(*text);
  ASSERT_EQ(back.size(), 60u);
  const json& one = back["party-3/task-1"];
  EXPECT_EQ(one["imagePullEndTime"], "2024-05-20T08:00:18.123Z");
  EXPECT_FALSE(one.contains("waiting"));
  EXPECT_EQ(one["reasons"]["pulling"]["message"].get<std::string>().size(), kKeptMessageBytes);
  EXPECT_EQ(one["createTime"], "2024-05-20T08:00:00Z");
}

TEST(KeptFactsTest, PastTheBoundMessagesGoThenEverything) {
  json entries = json::object();
  for (int pod = 0; pod < 300; ++pod)
    entries["alice/task-" + std::to_string(pod)] = keptFactsOf(podFacts(pod), "");
  auto text = keptFactsText(entries);
  ASSERT_TRUE(text); // without messages
  json back = keptEntries(*text);
  EXPECT_EQ(back["alice/task-7"]["reasons"]["pulling"], (json{{"reason", "Pulled"}}));
  for (int pod = 300; pod < 3000; ++pod)
    entries["alice/task-" + std::to_string(pod)] = keptFactsOf(podFacts(pod), "");
  EXPECT_FALSE(keptFactsText(entries));
}

TEST(KeptFactsTest, UnreadableOrNewerAnnotationsKeepNothing) {
  EXPECT_TRUE(keptEntries("").empty());
  EXPECT_TRUE(keptEntries("not json").empty());
  EXPECT_TRUE(keptEntries(R"({"v": 2, "entries": {"a/b": {}}})").empty());
  EXPECT_TRUE(keptEntries(R"({"v": 1, "entries": []})").empty());
}

TEST(KeptFactsTest, FactsOfAnotherIncarnationAreNotApplied) {
  json entries = {{"alice/p", keptFactsOf(podFacts(0), "2024-05-20T08:00:00Z")}};
  EXPECT_NE(keptFor(entries, "alice/p", json{{"createTime", "2024-05-20T08:00:00Z"}}), nullptr);
  EXPECT_NE(keptFor(entries, "alice/p", json::object()), nullptr);
  EXPECT_EQ(keptFor(entries, "alice/p", json{{"createTime", "2024-05-20T09:00:00Z"}}), nullptr);
  EXPECT_EQ(keptFor(entries, "alice/q", json::object()), nullptr);
}

TEST(KeptFactsTest, ATaskObjectReadsBackItsKeptFactsUnderWhatItsStatusHolds) {
  json entries = {{"alice/p", keptFactsOf(podFacts(0), "2024-05-20T08:00:00Z")},
                  {"bob/p", keptFactsOf(podFacts(1), "2024-05-20T07:00:00Z")}};
  json task = {
      {"metadata",
       {{"name", "t"}, {"annotations", {{kKeptFactsAnnotation, *keptFactsText(entries)}}}}},
      {"status",
       {{"podStatuses",
         {{"alice/p", {{"createTime", "2024-05-20T08:00:00Z"}, {"firstReadyTime", "mine"}}},
          {"bob/p", {{"createTime", "2024-05-20T08:00:00Z"}}}}}}}};
  json patch = json::parse(keptFactsPatch("x"));
  EXPECT_EQ(patch["metadata"]["annotations"][kKeptFactsAnnotation], "x");
  applyKeptFacts(task);
  const json& alice = task["status"]["podStatuses"]["alice/p"];
  EXPECT_EQ(alice["firstReadyTime"], "mine"); // what the entry holds stays
  EXPECT_EQ(alice["imagePullStartTime"], "2024-05-20T08:00:10Z");
  EXPECT_EQ(alice["createTime"], "2024-05-20T08:00:00Z");
  // bob's pod was recreated since: its kept facts are of the old incarnation.
  EXPECT_FALSE(task["status"]["podStatuses"]["bob/p"].contains("imagePullStartTime"));
}

} // namespace
} // namespace kuscia_host::model
