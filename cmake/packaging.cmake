# Installation (`cmake --install`) and the Debian package (CPack, `deploy/package.sh`);
# docs/packaging.md describes the layout.
#
# What `cmake --install` puts under the prefix (relative, so any --prefix works):
#   bin/vigild, bin/vigil          the daemon, and the CLI it also runs as its ingest workers
#                                  (server/recording: default_recorder_path() looks beside vigild)
#   share/vigil/web/               the web UI with its vendored hls.js (server/api: default_web_root()
#                                  looks in BINDIR/../share/vigil/web)
#   share/vigil/schema/*.sql       the catalog migrations, for reading only: vigild has them compiled in
#   share/doc/vigil/               README.md, docs/, the example configuration
# The Debian package adds the system files (component "system", left out of a plain
# `cmake --install` because their paths are absolute): /etc/vigil/vigild.conf (a conffile) and
# /lib/systemd/system/vigild.service; its maintainer scripts create the `vigil` account and
# /var/lib/vigil.
include(GNUInstallDirs)

set(VIGIL_INSTALL_WEB_DIR ${CMAKE_INSTALL_DATADIR}/vigil/web)

install(TARGETS vigild vigil RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
if(VIGIL_WEB_UI)
  # BUILD/web is filled by the web_ui target (deploy/web-deps.sh), part of `all`.
  install(DIRECTORY ${PROJECT_BINARY_DIR}/web/ DESTINATION ${VIGIL_INSTALL_WEB_DIR} COMPONENT runtime)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schema/ DESTINATION ${CMAKE_INSTALL_DATADIR}/vigil/schema COMPONENT runtime
        FILES_MATCHING PATTERN "*.sql")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/vigild.conf.example DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        COMPONENT runtime)

set(vigil_pkg ${PROJECT_SOURCE_DIR}/deploy/package)
install(FILES ${vigil_pkg}/vigild.conf DESTINATION /etc/vigil COMPONENT system EXCLUDE_FROM_ALL)
install(FILES ${vigil_pkg}/vigild.service DESTINATION /lib/systemd/system COMPONENT system EXCLUDE_FROM_ALL)

# The Debian package: one package, `vigil`, of both components.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME vigil)
set(CPACK_PACKAGE_VENDOR "Vigil")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "real-time storage server for video surveillance")
set(CPACK_PACKAGE_DESCRIPTION
    "vigild records hundreds of cameras onto admitted, profiled disks and serves playback, exports, HLS and an interactive query API; vigil is its command-line client.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime system)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # vigil_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_NAME vigil)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "Vigil maintainers <vigil@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION video)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://localhost/vigil")
# Shared libraries (FFmpeg, libpqxx, liburing, ISA-L, OpenSSL, protobuf, Boost) from
# dpkg-shlibdeps; besides them, what vigild runs: PostgreSQL's server binaries for the embedded
# catalog (embedded_postgres.cpp looks for /usr/lib/postgresql/N/bin/{initdb,postgres}) and
# useradd for the maintainer script. FFmpeg's programs are not run by vigild (tests use them).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "postgresql-15 | postgresql (>= 15), passwd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${vigil_pkg}/conffiles ${vigil_pkg}/postinst ${vigil_pkg}/prerm
                                       ${vigil_pkg}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The default preset builds RelWithDebInfo: the debug information (~300 MB) stays in the build
# tree, the package's binaries are stripped.
set(CPACK_STRIP_FILES ON)
include(CPack)
