# Generates a C++ source holding the CRD manifests as string literals (run at build time).
# Inputs: OUTPUT, MANIFESTS (files separated by '|').
string(REPLACE "|" ";" MANIFESTS "${MANIFESTS}")
set(body "")
foreach(f ${MANIFESTS})
  file(READ ${f} content)
  string(APPEND body "    R\"kh_crd(${content})kh_crd\",\n")
endforeach()
file(WRITE ${OUTPUT}.tmp "// Generated from config/crds by embed_crds.cmake; do not edit.
#include \"apiserver/resources.h\"

namespace kuscia_host::apiserver {
const std::vector<std::string>& embeddedCrdManifests() {
  static const std::vector<std::string> manifests = {
${body}  };
  return manifests;
}
} // namespace kuscia_host::apiserver
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
