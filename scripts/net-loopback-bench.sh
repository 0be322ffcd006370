#!/bin/bash
# On a many-core host: the network transport across two processes on
# loopback (distinct host ids via hostwrap.sh under mpirun), with 1, 2 and 4
# sockets a connection (GCCL_NSOCKS, a goroutine each: GCCL_NSOCKS_THREADS),
# beside a plain TCP socket one way (stream) and both ways at once (duplex,
# as 2 ranks' sendrecv and allreduce move data), PASSES passes (3).
# SOCKS (default "1 2 4") and BUFFS (Simple FIFO sizes, GCCL_BUFFSIZE;
# default "1M") pick the configurations.
# BIN=dir holds tcpcopy, sendrecv_perf, allreduce_perf and hostwrap.sh,
# CGO_ENABLED=0 builds for a machine without Go.
B=${BIN:?}
nproc
$B/tcpcopy serve 127.0.0.1:29600 & S=$!
for pass in $(seq "${PASSES:-3}"); do
	echo "### pass $pass tcpcopy"
	for mb in 16 128; do
		$B/tcpcopy stream 127.0.0.1:29600 $((mb << 20)) 9
		$B/tcpcopy duplex 127.0.0.1:29600 $((mb << 20)) 9
	done
	$B/tcpcopy ping 127.0.0.1:29600 20000
	for socks in ${SOCKS:-1 2 4}; do
		for buff in ${BUFFS:-1M}; do
			for t in sendrecv_perf allreduce_perf; do
				echo "### pass $pass socks=$socks buff=$buff $t"
				export GCCL_NSOCKS=$socks GCCL_NSOCKS_THREADS=$socks GCCL_BUFFSIZE=$buff
				timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 -x GCCL_NSOCKS -x GCCL_NSOCKS_THREADS -x GCCL_BUFFSIZE \
					$B/hostwrap.sh $B/$t -b 8 -e 128M -f 4 -n 20 -w 5 2>&1 | grep -E "^ +[0-9]|rror"
			done
		done
	done
done
kill $S
