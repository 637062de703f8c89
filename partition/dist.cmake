# halo_dpartition: the distributed partitioner (mpirun -np K halo-partition
# --method ptscotch), one file a phase (dist-read, dist-nodes, dist-renumber,
# dist-clean, dist-route, dist-write, dist-run), and its engine, PT-Scotch on
# a graph spread over the ranks.  Kept out of halo_partition so that the
# sequential library needs no MPI.
add_library(halo_dpartition STATIC
  dist-clean.c dist-nodes.c dist-read.c dist-renumber.c dist-route.c dist-run.c dist-write.c
  partition-ptscotch.c partition-dcoarsen.c partition-drefine.c)
halo_public_headers(halo_dpartition halo-dpartition.h)
target_link_libraries(halo_dpartition PUBLIC halo_partition halo_comm MPI::MPI_C
                      PRIVATE halo::ptscotch)
