#!/usr/bin/env bash
# Mid sizes side by side on this host, 2 ranks: gccl's allreduce, allgather
# and broadcast against Open MPI's (docs/data/peers/mpi_perf.c under
# mpirun -np 2), both placements, float (sum), PASSES alternating passes.
#
# Each pass runs, for every collective and placement:
#   mpi        Open MPI, default (single copy through CMA where it applies)
#   mpi-nosc   Open MPI with --mca btl_vader_single_copy_mechanism none
#   gccl       gccl, 2 ranks in one process (-g 2): direct reads on
#   gccl-copy  the same with GCCL_P2P_DIRECT_DISABLE=1 (every step through the FIFO)
#   gccl-np2   gccl, 2 processes (--np 2, shared-memory FIFOs)
# gccl runs -N 3 loops and keeps the median; the summary is the median over
# passes of each one's time, and busBw from it (nccl-tests' factors).
#
# usage: scripts/bench-mid.sh        (SIZES, PASSES, COLLS, OUT override;
#        BIN=dir uses dir/<coll>_perf and dir/mpi_perf.c instead of building)
# needs: mpicc and mpirun (apt-get install -y openmpi-bin libopenmpi-dev)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
sizes=${SIZES:-"524288 2097152"}
passes=${PASSES:-3}
colls=${COLLS:-"allreduce allgather broadcast"}
out=${OUT:-results/local/bench-mid}
mkdir -p "$out"
raw="$out/raw.txt"
: > "$raw"
if [ -n "${BIN:-}" ]; then
  mpicc -O2 -o "$out/mpi_perf" "$BIN/mpi_perf.c"
  for c in $colls; do cp "$BIN/${c}_perf" "$out/${c}_perf"; done
else
  mpicc -O2 -o "$out/mpi_perf" docs/data/peers/mpi_perf.c
  for c in $colls; do go build -o "$out/${c}_perf" "./cmd/${c}_perf"; done
fi
mpirun="mpirun --allow-run-as-root --oversubscribe -np 2"
mpiop() { case $1 in broadcast) echo bcast ;; *) echo "$1" ;; esac; }
# gccl WHO COLL SIZE [launcher flags]: median of 3 loops, per placement.
gccl() {
  local who=$1 c=$2 s=$3
  shift 3
  local n=$((s <= 524288 ? 300 : 100))
  "$out/${c}_perf" "$@" -b "$s" -e "$s" -n "$n" -w 10 -N 3 -c 0 -a 3 |
    awk '!/^#/ && NF >= 12 && $1 ~ /^[0-9]+$/ {print $6, $10}' > "$out/last.txt"
  for col in 1 2; do
    local place=oop
    [ "$col" = 2 ] && place=ip
    awk -v c="$col" '{print $c}' "$out/last.txt" | sort -g | sed -n 2p |
      awk -v who="$who" -v coll="$c" -v s="$s" -v p="$place" -v pass="$pass" '{print who, coll, p, s, $1, pass}' >> "$raw"
  done
}
for pass in $(seq "$passes"); do
  for c in $colls; do
    for s in $sizes; do
      for place in oop ip; do
        ipflag=""
        [ "$place" = ip ] && ipflag=inplace
        # mpi_perf: size iters t_med t_min algbw busbw_med busbw_max
        $mpirun "$out/mpi_perf" "$(mpiop "$c")" "$s" "$s" 5 $ipflag |
          awk -v c="$c" -v p="$place" -v pass="$pass" '!/^#/ && NF >= 6 {print "mpi", c, p, $1, $3, pass}' >> "$raw"
        $mpirun --mca btl_vader_single_copy_mechanism none "$out/mpi_perf" "$(mpiop "$c")" "$s" "$s" 5 $ipflag |
          awk -v c="$c" -v p="$place" -v pass="$pass" '!/^#/ && NF >= 6 {print "mpi-nosc", c, p, $1, $3, pass}' >> "$raw"
      done
      gccl gccl "$c" "$s" -g 2
      GCCL_P2P_DIRECT_DISABLE=1 gccl gccl-copy "$c" "$s" -g 2
      gccl gccl-np2 "$c" "$s" --np 2
    done
  done
done
# Summary: medians over passes, as a Markdown table.
echo "| collective | size (B) | placement | Open MPI | Open MPI, single copy off | gccl -g 2 | gccl -g 2, copy through FIFO | gccl --np 2 | gccl / Open MPI | gccl / MPI single copy off |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for c in $colls; do
  for s in $sizes; do
    for place in oop ip; do
      med() { awk -v who="$1" -v c="$c" -v p="$place" -v s="$s" '$1 == who && $2 == c && $3 == p && $4 == s {print $5}' "$raw" | sort -g |
        awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
      m=$(med mpi); mn=$(med mpi-nosc); g=$(med gccl); gc=$(med gccl-copy); gn=$(med gccl-np2)
      awk -v c="$c" -v s="$s" -v p="$place" -v m="$m" -v mn="$mn" -v g="$g" -v gc="$gc" -v gn="$gn" '
        function bw(t) { return s / t / 1e3 * f }
        BEGIN {
          f = c == "allgather" ? 0.5 : 1
          printf "| %s | %d | %s | %.1f us (%.2f GB/s) | %.1f us (%.2f) | %.1f us (%.2f) | %.1f us (%.2f) | %.1f us (%.2f) | %.2fx | %.2fx |\n",
            c, s, p == "oop" ? "out of place" : "in place", m, bw(m), mn, bw(mn), g, bw(g), gc, bw(gc), gn, bw(gn), m / g, mn / g
        }'
    done
  done
done
