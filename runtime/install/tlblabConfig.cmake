# find_package(tlblab): the targets tlblab::tlblab (static) and tlblab::tlblab_shared, with
# their include directory and the threads library they need.
include(CMakeFindDependencyMacro)
find_dependency(Threads)
include("${CMAKE_CURRENT_LIST_DIR}/tlblabTargets.cmake")
