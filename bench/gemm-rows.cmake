# gemm-rows: halo_cpu_gemm_rows (row-invariant) against cblas_sgemm.
add_executable(gemm-rows ${CMAKE_CURRENT_SOURCE_DIR}/gemm-rows.c)
target_link_libraries(gemm-rows PRIVATE halo_kernels halo_core OpenMP::OpenMP_C PkgConfig::OPENBLAS)
