# gemm-tn: the weight gradient's Aᵀ·B, halo's kernel at each vector width against cblas_sgemm.
add_executable(gemm-tn ${CMAKE_CURRENT_SOURCE_DIR}/gemm-tn.c)
target_link_libraries(gemm-tn PRIVATE halo_kernels halo_core OpenMP::OpenMP_C PkgConfig::OPENBLAS)
