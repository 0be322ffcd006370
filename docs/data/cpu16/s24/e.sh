#!/bin/bash
# A throwaway build: oneshot.Demote (CLDEMOTE through bytes in lines_amd64.s), TmpDemote and a temporary
# BareDemote benchmark; measured slower everywhere (call5_demote.txt) and not kept.
# session 24, call 5: CLDEMOTE of the one-shot's posts. The bare exchange with and without it
# (BareDemote), and the library's floor (FloorSideBySide) with TMP_DEMOTE=0 (none), 1 (plain payloads),
# 2 (and flags and LL lines), alternating, 4 passes.
cd "$(dirname "$0")"
gunzip -f demote.test.gz; chmod +x demote.test
for p in 1 2 3 4; do
  ./demote.test -test.run '^$' -test.bench BareDemote -test.benchtime 40x 2>&1 | grep Benchmark | sed "s/^/pass $p /"
  for m in 0 1 2; do
    TMP_DEMOTE=$m ./demote.test -test.run '^$' -test.bench FloorSideBySide -test.benchtime 40x 2>&1 | grep Benchmark | sed "s/^/pass $p mode $m /"
  done
done
