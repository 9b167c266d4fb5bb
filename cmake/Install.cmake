# Install.cmake — what `cmake --install` adds beyond the targets themselves:
#   lib/cmake/spmdc/        spmdcConfig.cmake, spmdcConfigVersion.cmake, spmdcTargets.cmake
#   lib/pkgconfig/spmdrt.pc
#   share/man/man1/spmdc.1, bash and zsh completions — generated at build time by
#   running the freshly built spmdc on its own command definitions (driver/cli_docs.h)
# Everything is relative to the install prefix, so an installed tree can be moved.
include(CMakePackageConfigHelpers)

set(SPMDC_STDLIB_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/spmdc/stdlib)
set(SPMDC_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/spmdc)
set(SPMDC_BASH_COMPLETION_DIR ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
    CACHE STRING "Where bash completions are installed (relative to the prefix)")
set(SPMDC_ZSH_COMPLETION_DIR ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions
    CACHE STRING "Where the zsh completion is installed (relative to the prefix; Debian's path)")

install(EXPORT spmdcTargets NAMESPACE spmdc:: DESTINATION ${SPMDC_CMAKE_INSTALL_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/spmdcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/spmdcConfig.cmake
  INSTALL_DESTINATION ${SPMDC_CMAKE_INSTALL_DIR}
  PATH_VARS SPMDC_STDLIB_INSTALL_DIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spmdcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/spmdcConfig.cmake ${PROJECT_BINARY_DIR}/spmdcConfigVersion.cmake
  DESTINATION ${SPMDC_CMAKE_INSTALL_DIR})

# pkg-config: ${pcfiledir} is LIBDIR/pkgconfig; climb back to the prefix.
set(SPMDC_PC_TO_PREFIX "..")
string(REPLACE "/" ";" _libdir_parts "${CMAKE_INSTALL_LIBDIR}")
foreach(_part IN LISTS _libdir_parts)
  string(APPEND SPMDC_PC_TO_PREFIX "/..")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/spmdrt.pc.in ${PROJECT_BINARY_DIR}/spmdrt.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/spmdrt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The man page and completions, from the built spmdc.
set(SPMDC_DOC_DIR ${PROJECT_BINARY_DIR}/share)
set(SPMDC_MAN_PAGE ${SPMDC_DOC_DIR}/man/man1/spmdc.1)
set(SPMDC_BASH_COMPLETION ${SPMDC_DOC_DIR}/bash-completion/spmdc)
set(SPMDC_ZSH_COMPLETION ${SPMDC_DOC_DIR}/zsh/_spmdc)
set(_run_to_file ${PROJECT_SOURCE_DIR}/cmake/run_to_file.cmake)
add_custom_command(
  OUTPUT ${SPMDC_MAN_PAGE} ${SPMDC_BASH_COMPLETION} ${SPMDC_ZSH_COMPLETION}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${SPMDC_DOC_DIR}/man/man1
          ${SPMDC_DOC_DIR}/bash-completion ${SPMDC_DOC_DIR}/zsh
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${SPMDC_MAN_PAGE} -P ${_run_to_file} -- $<TARGET_FILE:spmdc> man-page
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${SPMDC_BASH_COMPLETION} -P ${_run_to_file} -- $<TARGET_FILE:spmdc> completion bash
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${SPMDC_ZSH_COMPLETION} -P ${_run_to_file} -- $<TARGET_FILE:spmdc> completion zsh
  DEPENDS spmdc ${_run_to_file}
  COMMENT "Generating the spmdc man page and shell completions"
  VERBATIM)
add_custom_target(spmdc_docs ALL DEPENDS ${SPMDC_MAN_PAGE} ${SPMDC_BASH_COMPLETION} ${SPMDC_ZSH_COMPLETION})
install(FILES ${SPMDC_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${SPMDC_BASH_COMPLETION} DESTINATION ${SPMDC_BASH_COMPLETION_DIR})
install(FILES ${SPMDC_ZSH_COMPLETION} DESTINATION ${SPMDC_ZSH_COMPLETION_DIR})

# Teaching material, so that a course needs no source checkout (docs/install.md):
#   share/spmdc/samples/     the tutorial's programs (`spmdc run PREFIX/share/spmdc/samples/...`)
#   share/spmdc/exercises/   the graded exercises: task, starter and grade.json only (the
#                            reference answers stay in the source tree's solutions/);
#                            `spmdc exercises init DIR` copies them for a student
#   bin/spmdc-grade          the grader (scripts/grade.py); it finds the spmdc beside it
#   share/spmdc/editors/     syntax highlighting and the VS Code extension (editors/README.md)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/samples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/spmdc/samples)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/exercises/ DESTINATION ${CMAKE_INSTALL_DATADIR}/spmdc/exercises
        PATTERN "solution*.spmd" EXCLUDE)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/grade.py DESTINATION ${CMAKE_INSTALL_BINDIR}
        RENAME spmdc-grade)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/editors/ DESTINATION ${CMAKE_INSTALL_DATADIR}/spmdc/editors)
