#!/bin/bash
# session 22, call 9: FloorSideBySide, a733803 (old) against plain posts with the plain words after the
# LL words in one allocation (contig) and in an allocation of their own (split), 6 alternating passes
cd "$(dirname "$0")"
for p in 1 2 3 4 5 6; do for b in old contig split; do
  ./$b.test -test.run '^$' -test.bench 'FloorSideBySide' -test.benchtime 20x 2>&1 | grep Floor | awk -v b=$b -v p=$p '{print "pass" p, b, $1, $3, $5, $7}'
done; done > $OUT/sbs9.txt
cat $OUT/sbs9.txt
