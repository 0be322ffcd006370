#!/usr/bin/env bash
# Re-measures the figures of docs/PERFORMANCE.md on this machine. Run it on an
# idle machine; it alternates gccl and OpenMPI (the peer) so that both see the
# same conditions. Needs openmpi-bin and libopenmpi-dev (apt) for the peer.
# Output: docs/data/<name>.txt. Takes about 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/data
peer=$(mktemp -d)/mpi_perf
mpicc -O2 -o "$peer" docs/data/peers/mpi_perf.c
mkdir -p .bin
go build -o .bin/allreduce_perf ./cmd/allreduce_perf
{ uname -a; nproc; grep -m1 "model name" /proc/cpuinfo; go version; date -u; } > "$out/machine.txt"
: > "$out/mpi_2.txt"; : > "$out/mpi_4.txt"; : > "$out/bench_head.txt"
for pass in 1 2 3; do
  mpirun --allow-run-as-root --oversubscribe -np 2 "$peer" allreduce 8 67108864 3 >> "$out/mpi_2.txt" 2>/dev/null
  mpirun --allow-run-as-root --oversubscribe -np 4 "$peer" allreduce 8 67108864 3 >> "$out/mpi_4.txt" 2>/dev/null
  go test ./lib/ccl -run '^$' -bench 'AllReduce/ranks=(2|4)/proto=(LL|LL128|Simple)/nch=(1|2)/size=(8B|512B|32K|256K|2M|32M|64M)$' \
    -benchtime 1s -timeout 30m >> "$out/bench_head.txt"
done
go test ./lib/ccl -run '^$' -bench 'Oversubscribed' -benchtime 20x > "$out/bench_oversub.txt"
go test ./lib/ccl -run '^$' -bench 'CallOneRank' -count 3 > "$out/bench_call.txt"
go test ./lib/proto -run '^$' -bench 'LLPingPong' -count 3 > "$out/bench_pingpong.txt"
.bin/allreduce_perf -t 2 -b 8 -e 64M -f 4 -n 50 > "$out/allreduce_perf_t2.txt"
.bin/allreduce_perf -t 4 -b 8 -e 64M -f 4 -n 20 > "$out/allreduce_perf_t4.txt"
echo "done: $out"
