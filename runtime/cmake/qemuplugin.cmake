# tlblab's QEMU TCG plugin (runtime/qemu-plugin/): the references of an ARMv7 guest program run
# under qemu-arm's user mode, in the word stream of tlblab's Valgrind tool
# (`tlblab.capture_qemu`, seed 004's programs on the seed's ISA). A shared object QEMU loads with
# `-plugin`; it needs no QEMU headers (qemu_plugin_api.h declares the calls it makes) and no QEMU
# to build. Not part of the library. Skipped in sanitized builds (QEMU would load the sanitizer
# runtime into itself).
if(TLBLAB_SANITIZE)
  message(STATUS "tlblab QEMU plugin: not built in a sanitized build")
else()
  add_library(tlblab_qemu MODULE ${CMAKE_CURRENT_SOURCE_DIR}/qemu-plugin/tlblab_qemu.c)
  set_target_properties(tlblab_qemu PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/qemu-plugin
    C_VISIBILITY_PRESET hidden)
  target_include_directories(tlblab_qemu PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_compile_options(tlblab_qemu PRIVATE ${TLBLAB_WARNINGS})
  target_link_libraries(tlblab_qemu PRIVATE Threads::Threads)
endif()
