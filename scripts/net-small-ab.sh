#!/usr/bin/env bash
# net-small-ab.sh: small messages across 2 processes as 2 hosts on
# loopback (--np 2 --hosts 2), two builds side by side in alternating
# passes, beside Open MPI over TCP and a plain TCP ping-pong; 128 MiB to
# check bandwidth did not move (issue 20).
#
#   OLD=dir NEW=dir bash scripts/net-small-ab.sh [passes (3)] [out (results/local/net-small-ab.txt)]
#
# OLD and NEW each hold allreduce_perf and sendrecv_perf (built with
# go build from the two commits); tcpcopy and mpi_perf are built here
# (Open MPI: apt-get install -y openmpi-bin libopenmpi-dev). Each line is
# a perf table row: time in us is column 6 (out of place) and 10 (in place).
set -eu
PASSES=${1:-3}; OUT=${2:-results/local/net-small-ab.txt}; mkdir -p "$(dirname "$OUT")"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
go build -o "$T/tcpcopy" ./scripts/tcpcopy
mpicc -O2 -o "$T/mpi_perf" docs/data/peers/mpi_perf.c
"$T/tcpcopy" serve 127.0.0.1:29600 & S=$!
trap 'kill $S 2>/dev/null; rm -rf "$T"' EXIT
sleep 0.3
mpirun="timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl tcp,self"
row() { grep -E "^ +[0-9]" | tail -1; }
{
	echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
	for pass in $(seq "$PASSES"); do
		echo "### pass $pass"
		"$T/tcpcopy" ping 127.0.0.1:29600 20000
		"$T/tcpcopy" duplex 127.0.0.1:29600 $((128 << 20)) 5
		echo "mpi_tcp allreduce"; $mpirun "$T/mpi_perf" allreduce 8 8 5 2>&1 | grep -v "^#"
		echo "mpi_tcp sendrecv"; $mpirun "$T/mpi_perf" sendrecv 8 8 5 2>&1 | grep -v "^#"
		for v in old new; do
			d=$OLD; [ $v = new ] && d=$NEW
			echo "$v sr8 $(timeout 60 "$d/sendrecv_perf" --np 2 --hosts 2 -b 8 -e 8 -n 5000 -w 200 2>&1 | row)"
			echo "$v ar8 $(timeout 60 "$d/allreduce_perf" --np 2 --hosts 2 -b 8 -e 8 -n 5000 -w 200 2>&1 | row)"
			echo "$v ar4K $(timeout 60 "$d/allreduce_perf" --np 2 --hosts 2 -b 4K -e 4K -n 2000 -w 100 2>&1 | row)"
			echo "$v sr128M $(timeout 100 "$d/sendrecv_perf" --np 2 --hosts 2 -b 128M -e 128M -n 5 -w 2 2>&1 | row)"
			echo "$v ar128M $(timeout 100 "$d/allreduce_perf" --np 2 --hosts 2 -b 128M -e 128M -n 5 -w 2 2>&1 | row)"
		done
	done
} 2>&1 | tee "$OUT"
