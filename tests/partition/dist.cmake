# The distributed partitioner (partition/dist.cmake), end to end under mpirun:
# plan invariants, independence of K, the sequential writer's datasets,
# training, quality against METIS, bad input.
# Three cases at a time: the refusal cases idle about 2 s a run after its
# non-zero exit (tests/CMakeLists.txt, JOBS), which the others fill.
halo_add_test(test-partition-dist SOURCES test-partition-dist.c LIBS ${util} halo_shard TIMEOUT 900
              JOBS 3)
add_dependencies(test-partition-dist halo-partition halo-train)
target_compile_definitions(test-partition-dist PRIVATE
  HALO_PARTITION_EXE="$<TARGET_FILE:halo-partition>" HALO_TRAIN_EXE="$<TARGET_FILE:halo-train>"
  HALO_DATASETS_DIR="${HALO_DATASETS_DIR}")

# The coarsening and refinement around PT-Scotch, against the whole graph.
add_executable(dcoarsen-check dcoarsen-check.c)
target_link_libraries(dcoarsen-check PRIVATE halo_dpartition MPI::MPI_C)
target_include_directories(dcoarsen-check PRIVATE ${PROJECT_SOURCE_DIR}/partition)
halo_add_test(test-partition-dcoarsen SOURCES test-partition-dcoarsen.c LIBS ${util} TIMEOUT 600)
add_dependencies(test-partition-dcoarsen dcoarsen-check)
target_compile_definitions(test-partition-dcoarsen PRIVATE
  DCOARSEN_CHECK="$<TARGET_FILE:dcoarsen-check>")
