# mpi-bind.sh: sourced by the bench scripts.  mpi_bind THREADS prints the
# mpirun binding for a rank of THREADS threads: Open MPI's default at
# -np <= 2, each rank on its own core, for a rank of one thread (what users
# get); none for a rank of more threads, which one core would serialise
# (docs/train.md, --threads).
mpi_bind() {
  if [ "$1" -eq 1 ]; then echo "--bind-to core"; else echo "--bind-to none"; fi
}
