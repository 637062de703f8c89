# parallel-min: a loop on one thread against the OpenMP team, by size: the
# thresholds of kernels/cpu-parallel.h.
add_executable(parallel-min ${CMAKE_CURRENT_SOURCE_DIR}/parallel-min.c)
target_include_directories(parallel-min PRIVATE ${PROJECT_SOURCE_DIR}/kernels)
target_link_libraries(parallel-min PRIVATE halo_core OpenMP::OpenMP_C)
