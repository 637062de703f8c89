# spmm-stream: halo_spmm_cpu bandwidth against a STREAM triad, in one run;
# it also measures the partitioner's own row order (graph kinds sbm-part1,
# sbm-part4).
add_executable(spmm-stream ${CMAKE_CURRENT_SOURCE_DIR}/spmm-stream.c)
target_link_libraries(spmm-stream PRIVATE halo_spmm halo_partition halo_loaders halo_core
                      OpenMP::OpenMP_C m)
