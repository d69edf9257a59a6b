// A task's timeline document written straight as text: what dumpJson() writes of the document
// sdk::timeline::fromParts() builds, and what sdk::timeline::entryTimes() reads of each of its
// entries, without the document's DOM. task-history records a document per domain and task; as
// a DOM it was built (about 80,000 instructions a recording), dumped and freed, and read again
// for the summary, while the text and the times are all the store needs of a new recording.
#pragma once

#include <kuscia_host/timeline.hpp>
#include <kuscia_host/timeline_summary.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kuscia_host::plugins {

struct TimelineText {
  std::string json;              // dumpJson() of the document
  std::string phase, createTime; // the document's "phase" and "createTime" when strings, else ""
  // entryTimes() of each of the document's entries, in the entries' (key) order.
  std::vector<sdk::timeline::EntryTimes> entries;
};

// The document of fromParts(t), with "uid" added to the entries `entryUids` names (entry key,
// pod UID) and to the document when `uid` is not empty.
TimelineText timelineText(const sdk::timeline::TaskParts& t,
                          const std::vector<std::pair<std::string, std::string>>& entryUids,
                          std::string_view uid);

} // namespace kuscia_host::plugins
