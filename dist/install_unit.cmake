# Runs at `cmake --install` time (install(CODE) in CMakeLists.txt includes
# it): writes dist/slabtap.service.in and dist/slabtap.env with the paths of
# the prefix being installed into, so `cmake --install build --prefix P`
# gives a unit whose ExecStart is P/bin/slabtap and whose EnvironmentFile
# is P/etc/default/slabtap (/etc/default/slabtap for the prefixes / and
# /usr, as GNUInstallDirs places SYSCONFDIR). The configure-time prefix
# plays no part. Set by the caller: SLABTAP_SRC (the source tree),
# SLABTAP_GEN (a folder of the build tree), SLABTAP_BINDIR, SLABTAP_DATADIR,
# SLABTAP_SYSCONFDIR (GNUInstallDirs' CMAKE_INSTALL_*, relative or absolute).
function(slabtap_abs out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

slabtap_abs(bindir "${SLABTAP_BINDIR}")
slabtap_abs(datadir "${SLABTAP_DATADIR}")
if(NOT IS_ABSOLUTE "${SLABTAP_SYSCONFDIR}" AND CMAKE_INSTALL_PREFIX MATCHES "^/(usr/?)?$")
  set(sysconfdir "/${SLABTAP_SYSCONFDIR}")
else()
  slabtap_abs(sysconfdir "${SLABTAP_SYSCONFDIR}")
endif()
set(SLABTAP_BIN "${bindir}/slabtap")
set(SLABTAP_DATA_DIR "${datadir}/slabtap")
set(SLABTAP_ENV_FILE "${sysconfdir}/default/slabtap")
configure_file("${SLABTAP_SRC}/dist/slabtap.service.in" "${SLABTAP_GEN}/slabtap.service" @ONLY)
configure_file("${SLABTAP_SRC}/dist/slabtap.env" "${SLABTAP_GEN}/slabtap.env" @ONLY)
# lib/, not CMAKE_INSTALL_LIBDIR: units are not multiarch (P/lib/systemd/system;
# /usr/local/lib/systemd/system is on systemd's search path). file(INSTALL)
# honours DESTDIR and prints what it installs, as install(FILES) does.
file(INSTALL "${SLABTAP_GEN}/slabtap.service" DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
file(INSTALL "${SLABTAP_GEN}/slabtap.env" DESTINATION "${SLABTAP_DATA_DIR}")
