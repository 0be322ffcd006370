#!/usr/bin/env bash
# busy-host.sh: allreduce -t 2 with another program busy on one processor,
# beside the same without it, and Open MPI's MPI_Allreduce (mpi_perf.c)
# under the same load. Alternating passes; prints "LOAD WHO SIZE us" lines
# (gccl: out-of-place time; mpi_perf: t_med).
#
#   OLD=path/to/old/allreduce_perf NEW=path/to/allreduce_perf MPI=path/to/mpi_perf P=3 scripts/busy-host.sh
set -euo pipefail
P=${P:-3}
run_gccl() { # who binary
  "$2" -t 2 -b 8 -e 1M -f 128 -n 2000 -w 200 -c 0 | awk -v l="$load" -v w="$1" '$1 ~ /^[0-9]+$/ {print l, w, $1, $6}'
}
run_mpi() {
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$MPI" allreduce 8 1048576 5 |
    awk -v l="$load" '$1 ~ /^[0-9]+$/ && ($1 == 8 || $1 == 1024 || $1 == 131072 || $1 == 1048576) {print l, "mpi", $1, $3}'
}
for _ in $(seq "$P"); do
  for load in idle busy; do
    busy=""
    if [ "$load" = busy ]; then
      (while :; do :; done) &
      busy=$!
      sleep 0.3
    fi
    [ -n "${OLD:-}" ] && run_gccl old "$OLD"
    run_gccl new "$NEW"
    [ -n "${MPI:-}" ] && run_mpi
    [ -n "$busy" ] && kill "$busy"
  done
done
