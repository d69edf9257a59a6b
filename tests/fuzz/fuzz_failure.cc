// Why a task failed (kuscia_model/failure.h, the summary's step 6) on messages and
// terminationLogs as anyone may write them: a status entry or a task's status from the bytes, its
// excerpts bounded and free of control characters but newline and tab, the classification a name
// of the vocabulary, the summary's JSON dumpable (valid UTF-8) and the same from the document and
// from the values.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include <kuscia_model/failure.h>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_summary.h>

namespace {

using nlohmann::json;
namespace failure = kuscia_host::model::failure;
namespace tl = kuscia_host::model::timeline;

void checkExcerpt(const std::string& text, const char* what) {
  if (text.size() > failure::kExcerptBytes) kh_fuzz::fail(std::string(what) + " over 512 bytes");
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
      kh_fuzz::fail(std::string(what) + " holds a control character");
}

} // namespace

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // The first byte picks the fields the rest fills: parts cut at NUL bytes.
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string parts[4];
  for (std::size_t i = 0, at = 0; i < 4 && at <= in.size(); ++i) {
    std::size_t cut = std::min(in.find('\0', at), in.size());
    parts[i] = std::string(in.substr(at, cut - at));
    at = cut + 1;
  }
  const std::string excerpt = failure::excerpt(parts[2]);
  checkExcerpt(excerpt, "an excerpt");
  if (excerpt.size() < failure::excerpt(parts[2], failure::kExcerptBytes / 2).size())
    kh_fuzz::fail("a shorter bound gave a longer excerpt");
  const failure::Classification c =
      failure::classify({{"bob/t-0", parts[0], parts[1], 0}, {"", parts[3], parts[2], 1}});
  checkExcerpt(c.excerpt, "the classification's excerpt");
  if (!failure::reasonNamed(failure::name(c.reason))) kh_fuzz::fail("a reason without a name");
  // The same texts as Kuscia's status would hold them, through the document and the summary.
  json entry = {{"createTime", "2024-05-20T08:00:01Z"}, {"startTime", "2024-05-20T08:00:02Z"}};
  const char* fields[] = {"reason", "message", "terminationLog"};
  for (int i = 0; i < 3; ++i)
    if (data[0] & (1 << i)) entry[fields[i]] = parts[i];
  json doc = {{"createTime", "2024-05-20T08:00:00Z"},
              {"phase", (data[0] & 8) ? "Failed" : "Running"},
              {"entries", {{"bob/t-0", tl::entry("bob/t-0", entry, true)}}}};
  if (json evidence = tl::taskEvidence("", parts[3]); !evidence.is_null())
    doc["evidence"] = evidence;
  const int64_t now = *kuscia_host::sdk::parseTime("2024-05-20T09:00:00Z");
  const json summary = tl::summarize(doc, now);
  (void)summary.dump(); // throws on invalid UTF-8: an excerpt cut inside a sequence
  for (const char* which : {"failure", "stuck"})
    if (summary.contains(which)) checkExcerpt(summary[which].value("excerpt", ""), which);
  if ((data[0] & 8) && !summary.contains("failure")) kh_fuzz::fail("a Failed task without failure");
  std::vector<tl::EntryTimes> entries = {tl::entryTimes("bob/t-0", doc["entries"]["bob/t-0"])};
  const tl::Summary values = tl::summarize(kuscia_host::sdk::parseTime("2024-05-20T08:00:00Z"),
                                           entries, now, tl::TaskEnd::of(doc));
  if (tl::toJson(values, now) != summary) kh_fuzz::fail("the values' summary differs");
  return 0;
}
