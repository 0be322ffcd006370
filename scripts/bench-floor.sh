#!/usr/bin/env bash
# The latency floor on this host, side by side (issue 19): 2 ranks' 8 B,
# 64 B and 1 KiB float sum allreduce in one process (BenchmarkSmallAllReduce,
# a goroutine per rank, auto) beside a spin round trip between two
# goroutines (BenchmarkSpinRoundTrip) in the same test binary run, Open MPI
# with 2 processes (mpi_perf), gccl across 2 processes (--np 2); then 4 ranks'
# 8 B: Open MPI with 4 processes, gccl -g 4, -t 4 and --np 4. Every pass runs
# them all in turn; the summary is the median over passes (each pass's own
# figure: the benchmark's us/op and worst call of 10,000 (max_us); mpi_perf's
# median of 5 loops; perf's slowest rank, median of 3 loops); and the
# ratio to the spin measured side by side (BenchmarkFloorSideBySide).
#
# usage: scripts/bench-floor.sh            (PASSES, OUT override)
# needs: mpicc and mpirun (apt-get install -y openmpi-bin libopenmpi-dev)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
passes=${PASSES:-5}
out=${OUT:-results/local/bench-floor}
mkdir -p "$out"
raw="$out/raw.txt"
: >"$raw"
mpicc -O2 -o "$out/mpi_perf" docs/data/peers/mpi_perf.c
go build -o "$out/allreduce_perf" ./cmd/allreduce_perf
go test -c -o "$out/ccl.test" ./lib/ccl
mpirun="mpirun --allow-run-as-root --oversubscribe"
perf() { # perf ARGS...: "size time" lines, the median of -N 3 loops per size
	"$out/allreduce_perf" "$@" -n 5000 -w 500 -z 2 -c 0 -a 3 -N 3 --out-of-place-only |
		awk '!/^#/ && NF >= 8 && $1 ~ /^[0-9]+$/ {print $1, $6}' | sort -k1,1n -k2,2g |
		awk '{v[$1] = v[$1] " " $2} END {for (s in v) {n = split(v[s], a, " "); print s, a[int((n + 1) / 2)]}}'
}
for pass in $(seq "$passes"); do
	"$out/ccl.test" -test.run '^$' -test.bench 'SmallAllReduce/ranks=2/algo=auto|SpinRoundTrip' -test.benchtime 50000x |
		awk -v p="$pass" '/^BenchmarkSmall/ {split($1, f, "size="); sub(/-[0-9]+$/, "", f[2]); print "inproc", 2, f[2], $5, $3, p}
			/^BenchmarkSpin/ {print "spin", 2, "-", $5, $3, p}' >>"$raw"
	"$out/ccl.test" -test.run '^$' -test.bench 'FloorSideBySide' -test.benchtime 40x |
		awk -v p="$pass" '/^BenchmarkFloor/ {split($1, f, "size="); sub(/-[0-9]+$/, "", f[2]); print "sbs", 2, f[2], $5, $3, p, $7}' >>"$raw"
	$mpirun -np 2 "$out/mpi_perf" allreduce 8 1024 5 |
		awk -v p="$pass" '!/^#/ && ($1 == 8 || $1 == 1024) {print "mpi", 2, $1, $3, "-", p}' >>"$raw"
	$mpirun -np 2 "$out/mpi_perf" allreduce 64 64 5 | awk -v p="$pass" '!/^#/ && $1 == 64 {print "mpi", 2, $1, $3, "-", p}' >>"$raw"
	perf --np 2 -b 8 -e 64 -f 8 | awk -v p="$pass" '{print "np", 2, $1, $2, "-", p}' >>"$raw"
	perf --np 2 -b 1024 -e 1024 | awk -v p="$pass" '{print "np", 2, $1, $2, "-", p}' >>"$raw"
	$mpirun -np 4 "$out/mpi_perf" allreduce 8 8 5 | awk -v p="$pass" '!/^#/ && $1 == 8 {print "mpi", 4, 8, $3, "-", p}' >>"$raw"
	perf -g 4 -b 8 -e 8 | awk -v p="$pass" '{print "g", 4, 8, $2, "-", p}' >>"$raw"
	perf -t 4 -g 1 -b 8 -e 8 | awk -v p="$pass" '{print "t", 4, 8, $2, "-", p}' >>"$raw"
	perf --np 4 -b 8 -e 8 | awk -v p="$pass" '{print "np", 4, 8, $2, "-", p}' >>"$raw"
done
python3 - "$raw" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(who, n, size, col=3):
    v = [float(r[col]) for r in rows if r[0] == who and r[1] == n and r[2] == size and r[col] != "-"]
    return statistics.median(v) if v else float("nan")
name = {"8": "8B", "64": "64B", "1024": "1K"}
spin = med("spin", "2", "-")
print("2 ranks, us per allreduce (median of %d passes); spin round trip %.3f us (worst of 10,000: %.1f us)" % (
    len({r[5] for r in rows}), spin, med("spin", "2", "-", 4)))
print("| size | in process (auto) | worst of 10,000 | / spin round trip | Open MPI 2 procs | gccl --np 2 |")
print("|---|---:|---:|---:|---:|---:|")
for s in ("8", "64", "1024"):
    ip = med("inproc", "2", name[s])
    print("| %s B | %.3f | %.1f | %.1fx | %.3f | %.3f |" % (s, ip, med("inproc", "2", name[s], 4), ip / spin, med("mpi", "2", s), med("np", "2", s)))
print()
print("Side by side (BenchmarkFloorSideBySide: spin and allreduce blocks alternating on the same goroutines;")
print("each pass's medians over 40 block pairs, then the median over passes):")
print("| size | allreduce (us) | spin round trip (us) | allreduce / spin |")
print("|---|---:|---:|---:|")
for s in ("8", "64", "1024"):
    print("| %s B | %.3f | %.3f | %.2fx |" % (s, med("sbs", "2", name[s]), med("sbs", "2", name[s], 4), med("sbs", "2", name[s], 6)))
print()
print("| 4 ranks, 8 B | Open MPI 4 procs | gccl -g 4 | gccl -t 4 | gccl --np 4 |")
print("|---|---:|---:|---:|---:|")
print("| us | %.2f | %.2f | %.2f | %.2f |" % (med("mpi", "4", "8"), med("g", "4", "8"), med("t", "4", "8"), med("np", "4", "8")))
PY
