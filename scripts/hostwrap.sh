#!/bin/sh
# Runs a command as if each Open MPI rank were its own host (GCCL_HOSTID per rank), the
# network transport on loopback: mpirun -np 2 scripts/hostwrap.sh allreduce_perf ...
export GCCL_HOSTID=h$OMPI_COMM_WORLD_RANK GCCL_SOCKET_IFNAME=lo
exec "$@"
