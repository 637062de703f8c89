# mpi-bind.sh: sourced by the bench scripts.  mpi_bind THREADS prints the
# mpirun binding flags for ranks of THREADS threads: none for a rank of one
# thread, so that it gets Open MPI's default binding, what a user's mpirun
# gets (each rank on its own core at -np <= 2; with more ranks than cores,
# --oversubscribe, no binding); --bind-to none for a rank of more threads,
# which one core would serialise (docs/train.md, --threads).
mpi_bind() {
  if [ "$1" -gt 1 ]; then echo "--bind-to none"; fi
}
