#!/bin/bash
# session 21, call 3: D drivers per rank and freeProcs on the 16-core host
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
O=$OUT
s=$(date +%s); timeout 250 ./ccl.test -test.run 'TestMatrix$' -test.count=1 -test.v -test.timeout 240s > $O/matrix.txt 2>&1; echo "matrix rc=$? $(( $(date +%s) - s )) s, $(grep -c -- '--- PASS' $O/matrix.txt) passed"
s=$(date +%s); timeout 100 ./ccl.race.test -test.run 'TestFold|TestMatrixUnfolded|TestOtherWorlds|TestOversubscribed8x4|TestDestroyLeaves' -test.count=1 -test.timeout 90s > $O/race.txt 2>&1; echo "race rc=$? $(( $(date +%s) - s )) s"; tail -1 $O/race.txt
timeout 150 ./ccl.test -test.run XXX -test.bench 'Oversubscribed/ranks=(8|16)/nch=4/proto=(LL128|Simple)' -test.benchtime 20x -test.count 3 > $O/bench.txt 2>&1; echo "bench rc=$?"
for pass in 1 2; do for b in old new; do
 timeout 40 ./ar_$b -t 8 -b 2K -e 1M -f 8 -n 30 -w 5 --max-time 250ms --configs Ring/Simple/1,Ring/Simple/2,Ring/Simple/4 > $O/t8_${b}_$pass.txt 2>&1; echo "t8 $b rc=$?"
done; done
cd $O && tar czf r.tgz *.txt && rm -f *.txt
