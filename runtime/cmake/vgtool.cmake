# tlblab's Valgrind tool (runtime/valgrind/): what `tlblab trace record` runs by default.
#
# A Valgrind tool is a static executable linked with the core's libraries (libcoregrind, libvex)
# at a fixed address, with no libc: Debian's `valgrind` package ships the headers, the libraries
# and the load address (valgrind.pc). The tool is put in ${CMAKE_BINARY_DIR}/valgrind/ as
# `tlblab-<platform>`, beside links to the core files Valgrind loads from the same directory
# (vgpreload_core, default.supp) and to the stock Lackey and Nulgrind tools, so that
# `VALGRIND_LIB=<that dir> valgrind --tool=tlblab|lackey|none` all run with the same
# environment (the client's stack addresses depend on it; the equality test against Lackey needs
# the same addresses).
#
# Skipped, with a message, when the package's tool files are missing, on other platforms, and in
# sanitized builds (a tool cannot link the sanitizer runtimes).

set(TLBLAB_VG_PC_DIRS /usr/lib/x86_64-linux-gnu/pkgconfig /usr/lib/pkgconfig /usr/lib64/pkgconfig)
find_file(TLBLAB_VALGRIND_PC valgrind.pc PATHS ${TLBLAB_VG_PC_DIRS} NO_DEFAULT_PATH)

function(tlblab_vg_pc_var out var)
  file(STRINGS ${TLBLAB_VALGRIND_PC} line REGEX "^${var}=")
  string(REGEX REPLACE "^${var}=" "" value "${line}")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

set(TLBLAB_VGTOOL_BUILT OFF)
if(TLBLAB_SANITIZE)
  message(STATUS "tlblab Valgrind tool: not built in a sanitized build")
elseif(NOT TLBLAB_VALGRIND_PC)
  message(STATUS "tlblab Valgrind tool: not built (no valgrind.pc: install the Debian package valgrind)")
else()
  tlblab_vg_pc_var(TLBLAB_VG_PLATFORM platform)
  tlblab_vg_pc_var(TLBLAB_VG_ARCH arch)
  tlblab_vg_pc_var(TLBLAB_VG_OS os)
  tlblab_vg_pc_var(TLBLAB_VG_LOAD valt_load_address)
  tlblab_vg_pc_var(TLBLAB_VG_PREFIX prefix)
  # valgrind.pc: libdir=${prefix}/lib/<triplet>, includedir=${prefix}/include/valgrind
  tlblab_vg_pc_var(TLBLAB_VG_LIBDIR_RAW libdir)
  string(REPLACE "\${prefix}" "${TLBLAB_VG_PREFIX}" TLBLAB_VG_LIBDIR "${TLBLAB_VG_LIBDIR_RAW}")
  tlblab_vg_pc_var(TLBLAB_VG_INCDIR_RAW includedir)
  string(REPLACE "\${prefix}" "${TLBLAB_VG_PREFIX}" TLBLAB_VG_INCDIR "${TLBLAB_VG_INCDIR_RAW}")
  set(TLBLAB_VG_COREGRIND ${TLBLAB_VG_LIBDIR}/valgrind/libcoregrind-${TLBLAB_VG_PLATFORM}.a)
  set(TLBLAB_VG_VEX ${TLBLAB_VG_LIBDIR}/valgrind/libvex-${TLBLAB_VG_PLATFORM}.a)
  # Where the installed tools live (the launcher's default VALGRIND_LIB).
  find_file(TLBLAB_VG_PRELOAD vgpreload_core-${TLBLAB_VG_PLATFORM}.so
            PATHS ${TLBLAB_VG_PREFIX}/libexec/valgrind ${TLBLAB_VG_LIBDIR}/valgrind NO_DEFAULT_PATH)
  if(NOT TLBLAB_VG_PLATFORM STREQUAL "amd64-linux")
    message(STATUS "tlblab Valgrind tool: not built (platform ${TLBLAB_VG_PLATFORM}; amd64-linux only)")
  elseif(NOT EXISTS ${TLBLAB_VG_INCDIR}/pub_tool_basics.h OR NOT EXISTS ${TLBLAB_VG_COREGRIND}
         OR NOT EXISTS ${TLBLAB_VG_VEX} OR NOT TLBLAB_VG_PRELOAD)
    message(STATUS "tlblab Valgrind tool: not built (the valgrind package has no tool headers or libraries here)")
  elseif(NOT CMAKE_C_COMPILER_ID STREQUAL "GNU")
    message(STATUS "tlblab Valgrind tool: not built (needs gcc, as Valgrind itself)")
  else()
    set(TLBLAB_VGTOOL_BUILT ON)
  endif()
endif()

find_program(TLBLAB_VALGRIND valgrind)
if(TLBLAB_VGTOOL_BUILT)
  get_filename_component(TLBLAB_VG_CORE_DIR ${TLBLAB_VG_PRELOAD} DIRECTORY)
  set(TLBLAB_VGTOOL_DIR ${CMAKE_BINARY_DIR}/valgrind)
  file(MAKE_DIRECTORY ${TLBLAB_VGTOOL_DIR})
  string(TOUPPER ${TLBLAB_VG_ARCH} vg_arch_uc)
  add_executable(tlblab_vgtool valgrind/tlblab_main.c)
  set_target_properties(tlblab_vgtool PROPERTIES
    OUTPUT_NAME tlblab-${TLBLAB_VG_PLATFORM}
    RUNTIME_OUTPUT_DIRECTORY ${TLBLAB_VGTOOL_DIR}
    POSITION_INDEPENDENT_CODE OFF
    C_STANDARD 99 C_EXTENSIONS ON)  # Valgrind's headers use GNU C
  # SYSTEM: Valgrind's headers are not warning-free under -Wextra (unused parameters).
  target_include_directories(tlblab_vgtool SYSTEM PRIVATE ${TLBLAB_VG_INCDIR})
  target_include_directories(tlblab_vgtool PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/valgrind)
  target_compile_definitions(tlblab_vgtool PRIVATE VGA_${TLBLAB_VG_ARCH}=1 VGO_${TLBLAB_VG_OS}=1
                             VGP_${TLBLAB_VG_ARCH}_${TLBLAB_VG_OS}=1
                             VGPV_${TLBLAB_VG_ARCH}_${TLBLAB_VG_OS}_vanilla=1)
  # Valgrind's own flags for tools (Makefile.all.am): no stack protector, no builtins (there is
  # no libc to fall back to), no PIE.
  target_compile_options(tlblab_vgtool PRIVATE -O2 -g -fno-pie -fno-stack-protector
                         -fno-strict-aliasing -fno-builtin -fomit-frame-pointer
                         -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes)
  # Makefile.tool.am: static, no libc or start files, entered at the core's _start, at the
  # load address the core was built for.
  target_link_options(tlblab_vgtool PRIVATE -static -nodefaultlibs -nostartfiles -no-pie -u _start
                      -Wl,--build-id=none -Wl,-Ttext-segment=${TLBLAB_VG_LOAD})
  target_link_libraries(tlblab_vgtool PRIVATE ${TLBLAB_VG_COREGRIND} ${TLBLAB_VG_VEX} gcc)
  # The 32-bit x86 files too: Lackey then still runs a 32-bit program (seed 004's MiBench
  # builds, tlblab.seeds.s004_tlb_lockdown.mibench) under this VALGRIND_LIB; tlblab's own tool is amd64 only.
  foreach(f vgpreload_core-${TLBLAB_VG_PLATFORM}.so default.supp
            lackey-${TLBLAB_VG_PLATFORM} none-${TLBLAB_VG_PLATFORM}
            vgpreload_core-x86-linux.so lackey-x86-linux none-x86-linux)
    if(EXISTS ${TLBLAB_VG_CORE_DIR}/${f})
      file(CREATE_LINK ${TLBLAB_VG_CORE_DIR}/${f} ${TLBLAB_VGTOOL_DIR}/${f} SYMBOLIC)
    endif()
  endforeach()

  # Under the tool: the region-of-interest marks reach it, and the stream ends complete.
  add_executable(vgtool_roi_program tests/vgtool_roi_program.c)
  target_include_directories(vgtool_roi_program PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_compile_options(vgtool_roi_program PRIVATE ${TLBLAB_WARNINGS})
  add_test(NAME vgtool_roi_stream
    COMMAND ${CMAKE_COMMAND} -DVALGRIND=${TLBLAB_VALGRIND} -DTOOL_DIR=${TLBLAB_VGTOOL_DIR}
            -DPROGRAM=$<TARGET_FILE:vgtool_roi_program> -DOUT=${CMAKE_CURRENT_BINARY_DIR}/vgtool_roi.bin
            -P ${CMAKE_CURRENT_SOURCE_DIR}/tests/vgtool_roi_check.cmake)
endif()

# The marks outside Valgrind: the program runs natively and its checks pass.
add_executable(test_roi_native tests/vgtool_roi_program.c)
target_include_directories(test_roi_native PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_compile_options(test_roi_native PRIVATE ${TLBLAB_WARNINGS})
add_test(NAME roi_marks_native COMMAND test_roi_native)
