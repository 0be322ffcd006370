#!/bin/bash
# On the 16-core host: the network transport across two processes on loopback
# (distinct host ids via hostwrap.sh under mpirun), proxies parking (GCCL_NET_SPIN=0)
# against spinning (auto), beside a plain TCP socket; and BenchmarkNetPingPong.
# BIN=dir holds transport.test (go test -c ./lib/transport), tcpcopy, sendrecv_perf,
# allreduce_perf and hostwrap.sh, CGO_ENABLED=0 builds for a machine without Go.
B=${BIN:?}
nproc
$B/transport.test -test.run '^$' -test.bench NetPingPong -test.benchtime 20000x -test.count 3 2>&1 | grep Bench
$B/tcpcopy serve 127.0.0.1:29600 & S=$!
for pass in 1 2 3; do
	echo "### pass $pass tcpcopy"
	for mb in 1 16 128; do $B/tcpcopy stream 127.0.0.1:29600 $((mb << 20)) 9; done
	$B/tcpcopy ping 127.0.0.1:29600 20000
	for spin in 0 auto; do
		for t in sendrecv_perf allreduce_perf; do
			echo "### pass $pass spin=$spin $t"
			if [ $spin = auto ]; then export GCCL_NET_SPIN=; else export GCCL_NET_SPIN=0; fi
			timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 -x GCCL_NET_SPIN $B/hostwrap.sh $B/$t -b 8 -e 128M -f 4 -n 20 -w 5 2>&1 | grep -E "^ +[0-9]|rror"
		done
	done
done
kill $S
