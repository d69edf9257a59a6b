# kuscia_host_add_plugin(<name> SOURCES <src>... [LIBRARIES <lib>...] [OUTPUT_DIRECTORY <dir>])
#
# Builds a kuscia-host plugin: a MODULE library named <name>.so (no "lib" prefix; the file name is
# the name used in the host config) that exports kh_plugin_entry_v1, kh_offline_get_v1 when it
# defines it (KH_OFFLINE_ROUTES, ABI 1.2) and kh_commands_v1 when it declares commands
# (KH_COMMANDS, ABI 1.5), and nothing else (hidden visibility plus a version script), linked with
# -z defs so that an undefined symbol fails the
# build instead of the host's dlopen at run time.
#
# In-tree the SDK target is `kuscia_host_sdk`; an installed SDK provides `kuscia_host::sdk`.
include_guard(GLOBAL)

function(kuscia_host_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 KHP "" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES")
  if(NOT KHP_SOURCES)
    message(FATAL_ERROR "kuscia_host_add_plugin(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${KHP_SOURCES})
  if(TARGET kuscia_host_sdk)
    target_link_libraries(${name} PRIVATE kuscia_host_sdk)
  else()
    target_link_libraries(${name} PRIVATE kuscia_host::sdk)
  endif()
  if(KHP_LIBRARIES)
    target_link_libraries(${name} PRIVATE ${KHP_LIBRARIES})
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${name}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  if(KHP_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${KHP_OUTPUT_DIRECTORY})
  elseif(DEFINED KUSCIA_HOST_PLUGIN_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${KUSCIA_HOST_PLUGIN_OUTPUT_DIR})
  endif()
  # GCC marks some template statics STB_GNU_UNIQUE, which silently makes dlclose a no-op; a
  # plugin must be unloadable.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-gnu-unique>)
  endif()
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    # Hidden visibility does not cover template instantiations from the standard library, which
    # libstdc++ declares with default visibility; a version script exports the ABI's symbols alone.
    set(script ${CMAKE_CURRENT_BINARY_DIR}/${name}.kh-exports.map)
    file(WRITE ${script} "{\n  global: kh_plugin_entry_v*; kh_offline_get_v*; kh_commands_v*;\n  local: *;\n};\n")
    target_link_options(${name} PRIVATE "LINKER:--version-script=${script}")
    # clang links a sanitizer's runtime into the executable only: a sanitized plugin leaves the
    # runtime's symbols for the host to resolve at load, which -z defs would refuse.
    get_property(options DIRECTORY PROPERTY COMPILE_OPTIONS)
    string(FIND "${CMAKE_CXX_FLAGS};${options}" "-fsanitize=" sanitized)
    if(NOT (CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND sanitized GREATER -1))
      target_link_options(${name} PRIVATE "LINKER:-z,defs")
    endif()
    set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS ${script})
  endif()
endfunction()
