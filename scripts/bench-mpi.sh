#!/usr/bin/env bash
# Side by side on this host: gccl's allreduce across P processes (the
# built-in launcher, --np P: one rank per process, shared-memory transport)
# and Open MPI's MPI_Allreduce (docs/data/peers/mpi_perf.c under mpirun -np P),
# float sum, one size per run, the two alternating, PASSES passes.
#
# Both time blocking allreduces (gccl: -z 2, each operation waited for before
# the next) in loops of many iterations (mpi_perf: ~0.25 s; gccl: -n by size),
# take the slowest rank's mean per loop (gccl: -a 3), and the median of 5 loops
# (gccl: -N 5); the summary is the median over passes.
# busBw = size / time * 2(P-1)/P.
#
# usage: scripts/bench-mpi.sh            (PROCS, SIZES, PASSES, OUT override)
# needs: mpicc and mpirun (apt-get install -y openmpi-bin libopenmpi-dev)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
procs=${PROCS:-"2 4"}
sizes=${SIZES:-"8 1024 32768 524288 2097152 33554432 134217728"}
passes=${PASSES:-3}
out=${OUT:-results/local/bench-mpi}
mkdir -p "$out"
raw="$out/raw.txt"
: > "$raw"
mpicc -O2 -o "$out/mpi_perf" docs/data/peers/mpi_perf.c
go build -o "$out/allreduce_perf" ./cmd/allreduce_perf
mpirun="mpirun --allow-run-as-root --oversubscribe"
for pass in $(seq "$passes"); do
  for p in $procs; do
    for s in $sizes; do
      # mpi_perf: size iters t_med t_min algbw busbw_med busbw_max
      $mpirun -np "$p" "$out/mpi_perf" allreduce "$s" "$s" 5 |
        awk -v p="$p" -v pass="$pass" '!/^#/ && NF >= 6 {print "mpi", p, $1, $3, pass}' >> "$raw"
      # allreduce_perf: size count type redop root time algbw busbw #wrong (out of place)
      n=$(( s <= 32768 ? 2000 : s <= 524288 ? 300 : s <= 2097152 ? 100 : s <= 33554432 ? 8 : 3 ))
      "$out/allreduce_perf" --np "$p" -b "$s" -e "$s" -n "$n" -w 5 -N 5 -z 2 -c 0 -a 3 --out-of-place-only |
        awk '!/^#/ && NF >= 8 && $1 ~ /^[0-9]+$/ {print $6}' | sort -g | sed -n 3p |
        awk -v p="$p" -v s="$s" -v pass="$pass" '{print "gccl", p, s, $1, pass}' >> "$raw"
    done
  done
done
# Summary: medians over passes, as a Markdown table.
echo "| procs | size (B) | Open MPI time (us) | gccl time (us) | time ratio MPI/gccl | Open MPI busBw (GB/s) | gccl busBw (GB/s) |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for p in $procs; do
  for s in $sizes; do
    med() { awk -v who="$1" -v p="$p" -v s="$s" '$1 == who && $2 == p && $3 == s {print $4}' "$raw" | sort -g |
      awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
    m=$(med mpi)
    g=$(med gccl)
    awk -v p="$p" -v s="$s" -v m="$m" -v g="$g" 'BEGIN {
      f = 2 * (p - 1) / p
      printf "| %d | %d | %.2f | %.2f | %.2f | %.3f | %.3f |\n", p, s, m, g, m / g, s / m / 1e3 * f, s / g / 1e3 * f
    }'
  done
done
