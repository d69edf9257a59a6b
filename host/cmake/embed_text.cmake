# Generates a C++ source whose function FUNCTION (in NAMESPACE, declared in INCLUDE) returns the
# text of FILE as a string literal. Run at build time: cmake -DFILE=... -DOUTPUT=... -DFUNCTION=...
# -DNAMESPACE=... -DINCLUDE=... -P embed_text.cmake
file(READ ${FILE} text)
string(FIND "${text}" ")kh_text\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${FILE} holds the literal's end )kh_text\": rename the delimiter")
endif()
file(WRITE ${OUTPUT}.tmp "// Generated from ${FILE} by embed_text.cmake; do not edit.
#include \"${INCLUDE}\"

namespace ${NAMESPACE} {
const char* ${FUNCTION}() {
  return R\"kh_text(${text})kh_text\";
}
} // namespace ${NAMESPACE}
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
