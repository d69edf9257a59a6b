# Installation of everything that is not a build target (man page, config, systemd unit, sysusers,
# per-package docs) and the CPack description of the packages:
#
#   kuscia-host                         the daemon and CLI, man page, /etc config, unit, sysusers
#   kuscia-host-plugin-<name>           one per bundled plugin (heartbeat, the SDK example, excepted), = this version
#   kuscia-host-dev                     the SDK: headers, CMake package, pkg-config, template
#                                       (rpm: kuscia-host-devel, the RPM convention; noarch)
#
# `packaging/setup.sh package` configures a build for /usr with Debian's hardening flags and runs
# cpack (DEB and RPM) into dist/. Every path below is relative to the install prefix except the
# config, which is /etc for the /usr prefix (see KUSCIA_HOST_CONFIG_INSTALL_DIR).

set(kh_pkg_dir ${CMAKE_CURRENT_LIST_DIR})
set(kh_contact "kuscia-host developers <kuscia-host@example.org>")
set(kh_deb_release 1)
set(kh_full_version ${PROJECT_VERSION}-${kh_deb_release})

# The man page, with the version filled in and compressed as Debian wants (gzip -9n: no name or
# time stamp, so the package is reproducible).
configure_file(${kh_pkg_dir}/kuscia-host.1 ${CMAKE_BINARY_DIR}/packaging/kuscia-host.1 @ONLY)
set(kh_generated ${CMAKE_BINARY_DIR}/packaging)
add_custom_command(OUTPUT ${kh_generated}/kuscia-host.1.gz ${kh_generated}/changelog.Debian.gz
  COMMAND gzip -9n -c ${kh_generated}/kuscia-host.1 > ${kh_generated}/kuscia-host.1.gz
  COMMAND gzip -9n -c ${kh_pkg_dir}/doc/changelog > ${kh_generated}/changelog.Debian.gz
  DEPENDS ${kh_generated}/kuscia-host.1 ${kh_pkg_dir}/doc/changelog VERBATIM)
add_custom_target(kuscia-host-package-docs ALL
  DEPENDS ${kh_generated}/kuscia-host.1.gz ${kh_generated}/changelog.Debian.gz)

install(FILES ${kh_generated}/kuscia-host.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
  COMPONENT host)
install(FILES ${PROJECT_SOURCE_DIR}/config/kuscia-host.yaml
  DESTINATION ${KUSCIA_HOST_CONFIG_INSTALL_DIR} COMPONENT host)
# Prometheus recording and alerting rules (docs/operators/prometheus.md).
install(FILES ${PROJECT_SOURCE_DIR}/config/prometheus/kuscia-host-rules.yml
  ${PROJECT_SOURCE_DIR}/config/prometheus/kuscia-host-alerts.yml
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/kuscia-host/prometheus COMPONENT host)
# The Grafana dashboard (config/grafana/README.md).
install(FILES ${PROJECT_SOURCE_DIR}/config/grafana/kuscia-host.json
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/kuscia-host/grafana COMPONENT host)
install(FILES ${kh_pkg_dir}/systemd/kuscia-host.service DESTINATION lib/systemd/system
  COMPONENT host)
install(FILES ${kh_pkg_dir}/systemd/kuscia-host.sysusers DESTINATION lib/sysusers.d
  RENAME kuscia-host.conf COMPONENT host)
# The service's state directory (task-history's database): the service user's, 0750 (the rpm by
# %attr, the deb by its postinst, systemd by StateDirectory= at start).
install(DIRECTORY DESTINATION ${KUSCIA_HOST_STATE_INSTALL_DIR} COMPONENT host)

# component -> package name; every package carries its copyright and changelog.
set(kh_packages
  host kuscia-host
  plugin-task-timeline kuscia-host-plugin-task-timeline
  plugin-gateway-ready-time kuscia-host-plugin-gateway-ready-time
  plugin-scheduler-time kuscia-host-plugin-scheduler-time
  plugin-otel-export kuscia-host-plugin-otel-export
  plugin-task-history kuscia-host-plugin-task-history
  plugin-sim-agent kuscia-host-plugin-sim-agent
  sdk kuscia-host-dev)
set(kh_components "")
while(kh_packages)
  list(POP_FRONT kh_packages component package)
  # Two steps: ${CMAKE_MATCH_1} in the same if() would be expanded before the match sets it.
  if(component MATCHES "^plugin-(.*)$")
    if(NOT TARGET ${CMAKE_MATCH_1})
      continue() # switched off in this build (KH_PLUGIN_<NAME>=OFF)
    endif()
  endif()
  list(APPEND kh_components ${component})
  string(TOUPPER ${component} C)
  install(FILES ${kh_pkg_dir}/doc/copyright ${kh_generated}/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
  set(CPACK_DEBIAN_${C}_PACKAGE_NAME ${package})
  set(CPACK_RPM_${C}_PACKAGE_NAME ${package})
  if(package STREQUAL "kuscia-host-dev")
    set(CPACK_RPM_${C}_PACKAGE_NAME kuscia-host-devel)
  endif()
  set(CPACK_DEBIAN_${C}_FILE_NAME DEB-DEFAULT)
  set(CPACK_RPM_${C}_FILE_NAME RPM-DEFAULT)
  if(component MATCHES "^plugin-")
    set(CPACK_DEBIAN_${C}_PACKAGE_DEPENDS "kuscia-host (= ${kh_full_version})")
    set(CPACK_RPM_${C}_PACKAGE_REQUIRES "kuscia-host = ${kh_full_version}")
    set(CPACK_DEBIAN_${C}_PACKAGE_SECTION admin)
  endif()
endwhile()

set(CPACK_COMPONENT_HOST_DESCRIPTION "task-startup timelines for Kuscia: the plugin host
kuscia-host runs plugins (shared libraries with a stable C ABI) for the domains
of a Kuscia deployment and gives them one shared, rate-limited view of the
Kubernetes cluster. With its timeline plugins it fills every KusciaTask's
status with the startup time of each pod and service.
.
This package holds the daemon and its command line (run, check-config, demo,
timeline, apiserver), the systemd service and the default configuration.")
foreach(p task-timeline gateway-ready-time scheduler-time otel-export task-history sim-agent)
  string(TOUPPER plugin-${p} C)
  set(what_task-timeline "fills KusciaTask pod and service times
It writes, for every pod and service of a task in its domain, createTime,
startTime and readyTime into the task's status, and serves the timelines to
the host's web page and /api/v1/timelines.")
  set(what_gateway-ready-time "stamps services ready once the gateway serves them
It writes the kuscia.secretflow/ready-time annotation on each task service once
its Endpoints have an address (or Envoy lists its cluster); task-timeline reads
it as the service's readyTime.")
  set(what_scheduler-time "fills podStatuses scheduleTime
It writes each task pod's PodScheduled time into the task's status as
scheduleTime.")
  set(what_otel-export "sends task startups as OpenTelemetry traces
It sends each task's startup (the task, each party, pod and service, and each
phase with its reason and the critical path) over OTLP/HTTP to the tracing
backend operators run: an OpenTelemetry Collector, Jaeger or Grafana Tempo.")
  set(what_task-history "keeps every task's timeline after the task is gone
It records each task's timeline (every entry's times, the phases with their
reasons, the critical path) in SQLite (by default in /var/lib/kuscia-host)
or PostgreSQL, keeps it after Kuscia deletes the task, and serves it on
/api/v1/history and to kuscia-host history.")
  set(what_sim-agent "plays Kuscia's controllers for demos
For embedded, single-machine setups only: it creates each party's pods and
services as Kuscia does and moves them through scheduled, started and ready,
so that the timeline plugins have something to measure.")
  set(CPACK_COMPONENT_${C}_DESCRIPTION "kuscia-host plugin: ${what_${p}}
.
Enable it per domain in /etc/kuscia-host/kuscia-host.yaml.")
endforeach()
set(CPACK_COMPONENT_SDK_DESCRIPTION "kuscia-host plugin SDK
The C ABI header, the header-only C++ wrapper with a typed config reader, the
fake host for unit tests, the CMake package (find_package(kuscia-host-sdk 1.0)
and kuscia_host_add_plugin()), a pkg-config file and a plugin template in
/usr/share/kuscia-host-sdk/template.")

set(CPACK_PACKAGE_NAME kuscia-host)
set(CPACK_PACKAGE_VENDOR "kuscia-host developers")
set(CPACK_PACKAGE_CONTACT ${kh_contact})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# CPackDeb puts any summary but CPack's own placeholder above every description, whose first line
# is each package's own synopsis: keep the placeholder (no package shows it; the rpm summaries are
# set per package below).
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB RPM)
set(CPACK_COMPONENTS_ALL ${kh_components})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_RELOCATABLE OFF) # else the rpm says "Relocations: /usr"
set(CPACK_STRIP_FILES ON)
set(CPACK_THREADS 2)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${kh_deb_release})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${kh_contact})
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_HOST_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_HOST_PACKAGE_CONTROL_EXTRA
  "${kh_pkg_dir}/deb/conffiles;${kh_pkg_dir}/deb/postinst;${kh_pkg_dir}/deb/prerm;${kh_pkg_dir}/deb/postrm")
set(CPACK_DEBIAN_HOST_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_SDK_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_SDK_PACKAGE_ARCHITECTURE all) # header-only
set(CPACK_DEBIAN_SDK_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_SDK_PACKAGE_DEPENDS "nlohmann-json3-dev (>= 3.10)")
set(CPACK_DEBIAN_SDK_PACKAGE_RECOMMENDS "cmake (>= 3.25), g++ | clang, pkgconf")
set(CPACK_DEBIAN_SDK_PACKAGE_SUGGESTS "libgtest-dev")

set(CPACK_RPM_COMPONENT_INSTALL ON)
set(CPACK_RPM_PACKAGE_RELEASE ${kh_deb_release})
set(CPACK_RPM_PACKAGE_LICENSE "Apache-2.0")
set(CPACK_RPM_PACKAGE_URL "https://example.org/kuscia-host")
set(CPACK_RPM_CHANGELOG_FILE ${kh_pkg_dir}/rpm/changelog)
set(CPACK_RPM_HOST_USER_FILELIST "%config(noreplace) ${CMAKE_INSTALL_FULL_SYSCONFDIR}/kuscia-host/kuscia-host.yaml"
  "%dir %attr(0750,kuscia-host,kuscia-host) ${KUSCIA_HOST_STATE_INSTALL_DIR}")
set(CPACK_RPM_HOST_PRE_INSTALL_SCRIPT_FILE ${kh_pkg_dir}/rpm/pre)
set(CPACK_RPM_HOST_POST_INSTALL_SCRIPT_FILE ${kh_pkg_dir}/rpm/post)
set(CPACK_RPM_HOST_PRE_UNINSTALL_SCRIPT_FILE ${kh_pkg_dir}/rpm/preun)
set(CPACK_RPM_HOST_POST_UNINSTALL_SCRIPT_FILE ${kh_pkg_dir}/rpm/postun)
set(CPACK_RPM_SDK_PACKAGE_REQUIRES "json-devel >= 3.10")
set(CPACK_RPM_SDK_PACKAGE_ARCHITECTURE noarch)
set(CPACK_RPM_SDK_PACKAGE_GROUP "Development/Libraries")
# RPM summaries start with a capital (Debian's synopses do not).
set(CPACK_RPM_HOST_PACKAGE_SUMMARY "Task-startup timelines for Kuscia: the plugin host")
set(CPACK_RPM_SDK_PACKAGE_SUMMARY "SDK for kuscia-host plugins")
foreach(p task-timeline gateway-ready-time scheduler-time otel-export task-history sim-agent)
  string(TOUPPER plugin-${p} C)
  set(CPACK_RPM_${C}_PACKAGE_SUMMARY "Plugin for kuscia-host: ${p}")
endforeach()
# rpmbuild fills the Packager tag from this macro.
set(CPACK_RPM_SPEC_MORE_DEFINE "%define packager ${kh_contact}")
# Directories other packages own: not claimed by ours.
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
  /etc /usr/lib/systemd /usr/lib/systemd/system /usr/lib/sysusers.d /usr/share/man
  /usr/share/man/man1 /usr/share/doc /usr/${CMAKE_INSTALL_LIBDIR} /usr/share/cmake
  /usr/share/pkgconfig /usr/include /usr/share /var /var/lib)

set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/dist)
include(CPack)
