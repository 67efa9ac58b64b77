"""The peers that bench.peers runs on the emulated fabric beside the project's own allreduce: an
OpenMPI program (mpi4py), a PyTorch gloo program, and the rsh agent that lets mpirun start its
daemons in the emulated hosts' network namespaces."""
