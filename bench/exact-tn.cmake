# exact-tn: the exact Aᵀ·B and column sums of --deterministic against the float kernels.
add_executable(exact-tn ${CMAKE_CURRENT_SOURCE_DIR}/exact-tn.c)
target_link_libraries(exact-tn PRIVATE halo_kernels halo_core OpenMP::OpenMP_C m)
