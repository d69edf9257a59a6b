// The timeline web page the admin server serves at /ui/: recent tasks, and one task's timeline as
// a Gantt chart (one row per pod and service, one colour per phase, exact times on hover) with
// its table, drawn from /api/v1/timelines. Self-contained (no CDN, no build step, works offline);
// it renders every value as text, never as markup.
#pragma once

namespace kuscia_host {

const char* timelinePageHtml();

} // namespace kuscia_host
