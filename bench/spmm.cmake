# spmm-stream: halo_spmm_cpu bandwidth against a STREAM triad, in one run.
# With halo_partition (HDF5 found), it also measures the partitioner's own
# row order (graph kinds sbm-part1, sbm-part4).
add_executable(spmm-stream ${CMAKE_CURRENT_SOURCE_DIR}/spmm-stream.c)
target_link_libraries(spmm-stream PRIVATE halo_spmm halo_loaders halo_core halo_rng OpenMP::OpenMP_C m)
if(TARGET halo_partition)
  target_link_libraries(spmm-stream PRIVATE halo_partition)
  target_compile_definitions(spmm-stream PRIVATE HALO_BENCH_PARTITION=1)
endif()
