# halo_dpartition: the distributed partitioner's engine, PT-Scotch on a graph
# spread over the ranks (mpirun -np K halo-partition --method ptscotch).  Kept
# out of halo_partition so that the sequential library needs no MPI.
add_library(halo_dpartition STATIC partition-ptscotch.c partition-dcoarsen.c
            partition-drefine.c)
halo_public_headers(halo_dpartition halo-dpartition.h)
target_link_libraries(halo_dpartition PUBLIC halo_partition halo_comm MPI::MPI_C PRIVATE halo::ptscotch)
