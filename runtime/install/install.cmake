# `cmake --install`: libtlblab static (libtlblab.a) and shared (libtlblab.so.0), the public
# headers (tlblab/*.h, roi.h among them), a pkg-config file and a CMake package, so a program
# builds against an installed prefix like against any library:
#   cc prog.c $(pkg-config --cflags --libs tlblab)
#   find_package(tlblab 0.1 REQUIRED)  target_link_libraries(prog PRIVATE tlblab::tlblab)
# (tests/test_c_install.py builds the README's example both ways.) Kept out of cmake/*.cmake,
# which are the library's parts: this file reads the sources they added, so it runs after them.

include(CMakePackageConfigHelpers)

# The shared library: the static one's sources compiled again as position-independent code.
get_target_property(TLBLAB_ALL_SOURCES tlblab SOURCES)
add_library(tlblab_shared SHARED ${TLBLAB_ALL_SOURCES})
set_target_properties(tlblab_shared PROPERTIES
  OUTPUT_NAME tlblab
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  EXCLUDE_FROM_ALL FALSE)
target_include_directories(tlblab_shared PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
                                                $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_options(tlblab_shared PRIVATE ${TLBLAB_WARNINGS})
target_compile_definitions(tlblab_shared PRIVATE _GNU_SOURCE)
target_link_libraries(tlblab_shared PUBLIC Threads::Threads)

install(TARGETS tlblab tlblab_shared EXPORT tlblabTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/tlblab
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

# CMake package: tlblab::tlblab (static) and tlblab::tlblab_shared.
set(TLBLAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tlblab)
install(EXPORT tlblabTargets NAMESPACE tlblab:: DESTINATION ${TLBLAB_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tlblabConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/install/tlblabConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/tlblabConfigVersion.cmake
        DESTINATION ${TLBLAB_CMAKE_DIR})

# pkg-config: its prefix is found from where the file lies (${pcfiledir}), so `cmake --install
# --prefix P` (a prefix chosen after configuring) gives a file that is right under P.
file(RELATIVE_PATH TLBLAB_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" TLBLAB_PC_TO_PREFIX "${TLBLAB_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/install/tlblab.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tlblab.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tlblab.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
