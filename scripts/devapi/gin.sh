#!/usr/bin/env bash
# devapi/gin.sh: alltoall's GIN kernels (-D 3: GIN puts; -D 4: LSA inside a
# host, GIN across) beside the host alltoall across simulated hosts
# (--np N --hosts 2), alternating, ROUNDS (5) rounds, out-of-place busBw;
# prints lines "round np impl size busbw" for summarising with
# python3 scripts/devapi/gin_summary.py FILE.
#
#   BIN=dir [NPS="2 4"] [SIZES="-b 1M -e 16M -f 4"] bash scripts/devapi/gin.sh > gin.txt
#
# BIN holds a build of cmd/alltoall_perf.
set -u
BIN=${BIN:?}
for round in $(seq "${ROUNDS:-5}"); do
	for np in ${NPS:-2 4}; do
		for impl in host D3 D4; do
			case $impl in host) extra=() ;; D3) extra=(-R 2 -D 3 -V 1) ;; D4) extra=(-R 2 -D 4 -V 1) ;; esac
			timeout 300 "$BIN/alltoall_perf" --np "$np" --hosts 2 "${extra[@]}" ${SIZES:--b 1M -e 16M -f 4} -n 10 -w 3 -c 0 -d float 2>&1 |
				awk -v np="$np" -v impl=$impl -v round="$round" '$1 ~ /^[0-9]+$/ && NF >= 12 {print round, np, impl, $1, $8}'
		done
	done
done
