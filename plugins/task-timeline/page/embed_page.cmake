# Generates the C++ source that holds the timeline web page (index.html with timeline.css and
# timeline.js inlined, so the page is one self-contained answer) as a string literal. Run at build
# time; inputs: PAGE_DIR, OUTPUT.
file(READ ${PAGE_DIR}/index.html html)
file(READ ${PAGE_DIR}/timeline.css css)
file(READ ${PAGE_DIR}/timeline.js js)
set(link "<link rel=\"stylesheet\" href=\"timeline.css\">\n")
set(script "<script src=\"timeline.js\"></script>\n")
string(FIND "${html}" "${link}" at_link)
string(FIND "${html}" "${script}" at_script)
if(at_link EQUAL -1 OR at_script EQUAL -1)
  message(FATAL_ERROR "${PAGE_DIR}/index.html must link timeline.css and timeline.js as: ${link}${script}")
endif()
string(REPLACE "${link}" "<style>\n${css}</style>\n" html "${html}")
string(REPLACE "${script}" "<script>\n${js}</script>\n" html "${html}")
string(FIND "${html}" ")kh_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "the page holds the literal's end )kh_page\": rename the delimiter")
endif()
file(WRITE ${OUTPUT}.tmp "// Generated from plugins/task-timeline/page/ by embed_page.cmake; do not edit.
#include \"timeline_page.h\"

namespace kuscia_host::plugins::timeline {
const char* timelinePageHtml() {
  return R\"kh_page(${html})kh_page\";
}
} // namespace kuscia_host::plugins::timeline
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
