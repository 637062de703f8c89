# spmm-cuda: the planned cuSPARSE SpMM against a device-to-device copy, on
# an in-memory sbm graph (bench/train-gpu.sh runs it). Built with CUDA only.
if(HALO_HAVE_CUDA)
  halo_cuda_sources(sources ${CMAKE_CURRENT_SOURCE_DIR}/spmm-cuda.cu)
  add_executable(spmm-cuda ${sources})
  target_link_libraries(spmm-cuda PRIVATE halo_spmm_cuda halo_core CUDA::cudart)
endif()
