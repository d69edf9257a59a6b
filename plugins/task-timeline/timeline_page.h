// The timeline web page task-timeline serves at /ui/ on the host's admin server: recent tasks, and
// one task's timeline answering at a glance: the summary (startup, last party, the blame line),
// a time axis in seconds from the task's creation, rows grouped by party with each party's ready
// mark, one colour per phase (image pull and container start included), the critical path
// outlined, reasons on hover and in the table, redrawn live (every 2 s, or ?refresh=MS) without
// a reload. Drawn from /api/v1/timelines. Self-contained (no CDN, works offline): page/index.html,
// timeline.css and timeline.js, inlined into one answer at build time (page/embed_page.cmake);
// it renders every value as text, never as markup.
#pragma once

#include <string_view>

namespace kuscia_host::plugins::timeline {

inline constexpr std::string_view kPagePrefix = "/ui";

const char* timelinePageHtml();

} // namespace kuscia_host::plugins::timeline
