#!/usr/bin/env bash
# netns-bench.sh: gccl across two "hosts" (network namespaces joined by one
# veth pair: two real TCP stacks) against a plain TCP socket between the
# same endpoints, in alternating passes (issue 20). Needs root and iproute2.
#
#   bash scripts/netns-bench.sh [passes (3)] [out dir (results/local/netns)]
#
# BIN=dir takes prebuilt tcpcopy, allreduce_perf and sendrecv_perf from dir
# (a machine without Go); else they are built here.
# Per pass: tcpcopy stream (one way) and duplex (both ways at once, as 2
# ranks' sendrecv and allreduce move data) 1-128 MiB, a lean 2-rank ring
# allreduce over one socket (tcpcopy ring) 1-128 MiB, and an 8 B ping-pong; then gccl's
# sendrecv_perf and allreduce_perf, one process of one rank per namespace
# (GCCL_LAUNCH_RANK/SIZE, the root in the first), 8 B-128 MiB, and 8 B
# again with 2000 iterations.
set -eu
PASSES=${1:-3}; OUT=${2:-results/local/netns}; mkdir -p "$OUT"
[ "$(id -u)" = 0 ] || { echo "netns-bench: needs root (network namespaces)"; exit 2; }
command -v ip >/dev/null || { echo "netns-bench: needs iproute2 (ip)"; exit 2; }
T=$(mktemp -d); TAG=nb$$
A=${TAG}a; B=${TAG}b; NET=198.19.77
cleanup() { ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
if [ -n "${BIN:-}" ]; then
	cp "$BIN"/tcpcopy "$BIN"/allreduce_perf "$BIN"/sendrecv_perf $T/
else
	go build -o $T/tcpcopy ./scripts/tcpcopy
	go build -o $T/allreduce_perf ./cmd/allreduce_perf
	go build -o $T/sendrecv_perf ./cmd/sendrecv_perf
fi
ip netns add $A; ip netns add $B
ip link add ${TAG}x netns $A type veth peer name ${TAG}y netns $B
ip -n $A addr add $NET.1/24 dev ${TAG}x; ip -n $A link set ${TAG}x up; ip -n $A link set lo up
ip -n $B addr add $NET.2/24 dev ${TAG}y; ip -n $B link set ${TAG}y up; ip -n $B link set lo up
ip netns exec $B $T/tcpcopy serve $NET.2:29600 & SERVER=$!
trap 'kill $SERVER 2>/dev/null; cleanup' EXIT
gccl() { # program args...: rank 0 in A (prints), rank 1 in B
	local tok; tok=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	local env="GCCL_LAUNCH_SIZE=2 GCCL_COMM_ID=$NET.1:29601 GCCL_JOB_TOKEN=$tok"
	ip netns exec $B env $env GCCL_LAUNCH_RANK=1 GCCL_HOSTID=$B GCCL_SOCKET_IFNAME=${TAG}y "$T/$1" "${@:2}" >/dev/null &
	ip netns exec $A env $env GCCL_LAUNCH_RANK=0 GCCL_HOSTID=$A GCCL_SOCKET_IFNAME=${TAG}x "$T/$1" "${@:2}"
	wait
}
{
	echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
	for pass in $(seq 1 $PASSES); do
		echo "### pass $pass tcpcopy"
		for mb in 1 4 16 64 128; do ip netns exec $A $T/tcpcopy stream $NET.2:29600 $((mb << 20)) 9; done
		for mb in 1 4 16 64 128; do ip netns exec $A $T/tcpcopy duplex $NET.2:29600 $((mb << 20)) 9; done
		for mb in 1 16 128; do ip netns exec $A $T/tcpcopy ring $NET.2:29600 $((mb << 20)) 9; done
		ip netns exec $A $T/tcpcopy ping $NET.2:29600 10000
		echo "### pass $pass gccl sendrecv_perf"; gccl sendrecv_perf -b 8 -e 128M -f 4 -n 20 -w 5
		echo "### pass $pass gccl allreduce_perf"; gccl allreduce_perf -b 8 -e 128M -f 4 -n 20 -w 5
		# 20 iterations time 8 B poorly (a wake-up or two decide it): 2000 more.
		echo "### pass $pass gccl 8 B sendrecv_perf, 2000 iterations"; gccl sendrecv_perf -b 8 -e 8 -n 2000 -w 100
		echo "### pass $pass gccl 8 B allreduce_perf, 2000 iterations"; gccl allreduce_perf -b 8 -e 8 -n 2000 -w 100
	done
} 2>&1 | tee "$OUT/netns-bench.txt"
