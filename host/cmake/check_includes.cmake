# Fails when a file of host/src/FOLDER includes "other/..." for a folder `other` that is neither
# FOLDER nor in DEPS (the host libraries FOLDER links). Run by kh_host_library() at build time.
#   cmake -DFOLDER=kube -DDEPS=common|apimachinery -DFILES=a.cc|b.h -DSTAMP=file -P check_includes.cmake
string(REPLACE "|" ";" files "${FILES}")
string(REPLACE "|" ";" deps "${DEPS}")
set(allowed ${FOLDER} ${deps})
set(problems "")
foreach(file IN LISTS files)
  file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z0-9_]+/")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "\"([a-z0-9_]+)/([^\"]+)\"" _ "${line}")
    set(folder ${CMAKE_MATCH_1})
    list(FIND allowed ${folder} found)
    if(found EQUAL -1)
      string(APPEND problems "  ${file}: #include \"${folder}/${CMAKE_MATCH_2}\", but kh_${FOLDER} "
                             "does not link kh_${folder} (it links: ${deps})\n")
    endif()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "layering violation in host/src/${FOLDER}:\n${problems}"
                      "Include only from the folder itself and the libraries it links "
                      "(DEPS in its CMakeLists.txt), or move the shared code down a layer.")
endif()
file(WRITE ${STAMP} "ok\n")
