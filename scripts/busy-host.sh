#!/usr/bin/env bash
# busy-host.sh: allreduce -t RANKS with LOOPS other programs busy (a shell
# loop each), beside the same without them, and Open MPI's MPI_Allreduce
# (mpi_perf.c, mpirun -np RANKS --bind-to none) under the same load.
# Alternating passes; prints "LOAD WHO SIZE us" lines (gccl: out-of-place
# time; mpi_perf: t_med).
#
#   OLD=path/to/old/allreduce_perf NEW=path/to/allreduce_perf MPI=path/to/mpi_perf \
#     [RANKS=2] [LOOPS=1] [P=3] [LAYOUT=threads|mpirun] scripts/busy-host.sh
#
# LAYOUT=mpirun runs gccl as RANKS processes under mpirun --bind-to none
# (one rank each), as Open MPI runs, instead of -t RANKS in one process.
#
# The loops are started as statements of their own and killed by their
# pids (a loop started as "cmd && (loop) &" outlives its kill).
set -euo pipefail
P=${P:-3}
RANKS=${RANKS:-2}
LOOPS=${LOOPS:-1}
run_gccl() { # who binary
  if [ "${LAYOUT:-threads}" = mpirun ]; then
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$RANKS" "$2" -b 8 -e 1M -f 128 -n 2000 -w 200 -c 0
  else
    "$2" -t "$RANKS" -b 8 -e 1M -f 128 -n 2000 -w 200 -c 0
  fi | awk -v l="$load" -v w="$1" '$1 ~ /^[0-9]+$/ {print l, w, $1, $6}'
}
run_mpi() {
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$RANKS" "$MPI" allreduce 8 1048576 5 |
    awk -v l="$load" '$1 ~ /^[0-9]+$/ && ($1 == 8 || $1 == 1024 || $1 == 131072 || $1 == 1048576) {print l, "mpi", $1, $3}'
}
busy=()
stop_loops() {
  if [ "${#busy[@]}" -gt 0 ]; then kill "${busy[@]}" 2>/dev/null || true; fi
  busy=()
}
trap stop_loops EXIT
trap "stop_loops; exit 143" TERM INT
for _ in $(seq "$P"); do
  for load in idle busy; do
    if [ "$load" = busy ]; then
      for _ in $(seq "$LOOPS"); do
        (while :; do :; done) &
        busy+=($!)
      done
      sleep 0.3
    fi
    [ -n "${OLD:-}" ] && run_gccl old "$OLD"
    run_gccl new "$NEW"
    [ -n "${MPI:-}" ] && run_mpi
    stop_loops
  done
done
