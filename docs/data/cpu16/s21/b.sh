#!/bin/bash
# session 21, call 2: does TestMatrix hang on 16 cores? new vs old, verbose, with a stack dump at the timeout
cd "$(dirname "$0")/.."
O=$OUT
for b in ccl ccl_old; do
  start=$(date +%s.%N)
  ./$b.test -test.run 'TestMatrix$' -test.count=1 -test.v -test.timeout 130s > $O/matrix_$b.txt 2>&1; rc=$?
  echo "$b rc=$rc $(echo "$(date +%s.%N) - $start" | bc) s; passes $(grep -c -- '--- PASS' $O/matrix_$b.txt)"
done
cd $O && tar czf r.tgz *.txt && rm -f *.txt
