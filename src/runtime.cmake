# halo_runtime: MPI helpers, halo exchange, backends, the distributed GCN,
# checkpoints and the watchdog.
# halo-train: the command line over it.
#
# Included from src/CMakeLists.txt, before kernels/, spmm/ and loaders/ are
# processed: the libraries below are linked by name and resolved when CMake
# generates the build.
add_library(halo_runtime STATIC
  halo-mpi.c halo-exchange.c halo-backend.c backend-cpu.c
  gcn-adjacency.c halo-gcn.c halo-train-args.c halo-checkpoint.c halo-watchdog.c)
target_include_directories(halo_runtime PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(halo_runtime
  PUBLIC halo_core halo_shard halo_predict halo_spmm MPI::MPI_C
  PRIVATE halo_kernels halo_rng halo::hdf5 OpenMP::OpenMP_C m)

# The CUDA backend: plain C over the C-callable CUDA libraries of kernels/
# and spmm/, so halo_runtime itself needs no CUDA compiler.
if(HALO_HAVE_CUDA)
  target_sources(halo_runtime PRIVATE backend-cuda.c)
  target_compile_definitions(halo_runtime PUBLIC HALO_HAVE_CUDA)
  target_link_libraries(halo_runtime PRIVATE halo_kernels_cuda halo_spmm_cuda)
endif()

add_executable(halo-train halo-train.c)
target_link_libraries(halo-train PRIVATE halo_runtime OpenMP::OpenMP_C PkgConfig::OPENBLAS m)
target_compile_definitions(halo-train PRIVATE HALO_VERSION="${PROJECT_VERSION}")
