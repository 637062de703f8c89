# halo_dpartition: the distributed partitioner (mpirun -np K halo-partition
# --method ptscotch): sliced loading, distributed clean-up, SCOTCH_dgraphPart,
# and the routing of every part to the rank that writes it.
