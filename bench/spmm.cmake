# spmm-stream: halo_spmm_cpu bandwidth against a STREAM triad, in one run.
add_executable(spmm-stream ${CMAKE_CURRENT_SOURCE_DIR}/spmm-stream.c)
target_link_libraries(spmm-stream PRIVATE halo_spmm halo_loaders halo_core halo_rng OpenMP::OpenMP_C m)
