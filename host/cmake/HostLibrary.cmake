# kh_host_library(<folder> SOURCES <src>... [DEPS <kh_folder>...] [LIBS <external>...]
#                 [PCH <header>...])
#
# Builds src/<folder> as the static library kh_<folder>, linked PUBLIC to the libraries of the
# host folders in DEPS and to the external LIBS. Every build checks that the folder's sources
# include headers only from itself and from DEPS (cmake/check_includes.cmake), so a layering
# violation fails the build instead of waiting for a reviewer. PCH names heavy third-party
# headers to precompile for the folder's sources (with KH_PCH; see the top-level CMakeLists).
include_guard(GLOBAL)

set(KH_HOST_SRC_DIR ${CMAKE_CURRENT_LIST_DIR}/../src)

function(kh_host_library folder)
  cmake_parse_arguments(PARSE_ARGV 1 KHL "" "" "SOURCES;DEPS;LIBS;PCH")
  set(target kh_${folder})
  add_library(${target} STATIC ${KHL_SOURCES})
  target_include_directories(${target} PUBLIC ${KH_HOST_SRC_DIR})
  foreach(dep IN LISTS KHL_DEPS)
    target_link_libraries(${target} PUBLIC kh_${dep})
  endforeach()
  if(KHL_LIBS)
    target_link_libraries(${target} PUBLIC ${KHL_LIBS})
  endif()
  set_property(TARGET ${target} PROPERTY KH_DEPS "${KHL_DEPS}")
  if(KH_PCH AND KHL_PCH)
    target_precompile_headers(${target} PRIVATE ${KHL_PCH})
  endif()

  file(GLOB headers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.h ${CMAKE_CURRENT_SOURCE_DIR}/*.in)
  set(files ${headers})
  foreach(src IN LISTS KHL_SOURCES)
    if(NOT IS_ABSOLUTE ${src})
      set(src ${CMAKE_CURRENT_SOURCE_DIR}/${src})
    endif()
    if(EXISTS ${src})
      list(APPEND files ${src})
    endif()
  endforeach()
  string(REPLACE ";" "|" files_arg "${files}")
  string(REPLACE ";" "|" deps_arg "${KHL_DEPS}")
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${target}.includes-checked)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DFOLDER=${folder} -DDEPS=${deps_arg} -DFILES=${files_arg}
            -DSTAMP=${stamp} -P ${KH_HOST_SRC_DIR}/../cmake/check_includes.cmake
    DEPENDS ${files} ${KH_HOST_SRC_DIR}/../cmake/check_includes.cmake
    COMMENT "Checking the includes of host/src/${folder}" VERBATIM)
  add_custom_target(${target}_includes DEPENDS ${stamp})
  add_dependencies(${target} ${target}_includes)
endfunction()
