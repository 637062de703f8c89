# The distributed partitioner (partition/dist.cmake), end to end under mpirun:
# plan invariants, independence of K, the sequential writer's datasets,
# training, quality against METIS, bad input.
halo_add_test(test-partition-dist SOURCES test-partition-dist.c LIBS ${util} halo_shard TIMEOUT 900)
add_dependencies(test-partition-dist halo-partition halo-train)
target_compile_definitions(test-partition-dist PRIVATE
  HALO_PARTITION_EXE="$<TARGET_FILE:halo-partition>" HALO_TRAIN_EXE="$<TARGET_FILE:halo-train>"
  HALO_DATASETS_DIR="${HALO_DATASETS_DIR}")
