// The timeline web page task-timeline serves at /ui/ on the host's admin server: recent tasks, and
// one task's timeline as a Gantt chart (one row per pod and service, one colour per phase, exact
// times on hover) with its table, drawn from /api/v1/timelines. Self-contained (no CDN, no build
// step, works offline); it renders every value as text, never as markup.
#pragma once

#include <string_view>

namespace kuscia_host::plugins::timeline {

inline constexpr std::string_view kPagePrefix = "/ui";

const char* timelinePageHtml();

} // namespace kuscia_host::plugins::timeline
