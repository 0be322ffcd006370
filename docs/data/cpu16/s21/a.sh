#!/bin/bash
# session 21, call 1: folded channels on the 16-core host
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
O=$OUT
nproc; lscpu | grep -E "Model name|^CPU\(s\)" 
timeout 100 ./ccl.test -test.run 'TestMatrix$|TestFold|TestMatrixUnfolded|TestOversubscribed8x4|TestDestroyLeaves|TestTimeoutAborts' -test.count=1 > $O/tests.txt 2>&1; echo "tests rc=$?"; tail -2 $O/tests.txt
timeout 200 ./ccl.test -test.run XXX -test.bench Oversubscribed -test.benchtime 20x -test.count 3 > $O/bench.txt 2>&1; echo "bench rc=$?"
for pass in 1 2; do for b in old new; do
 timeout 60 ./ar_$b -t 8 -b 2K -e 1M -f 8 -n 30 -w 5 --max-time 250ms --configs auto,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4,Ring/LL/4 > $O/t8_${b}_$pass.txt 2>&1; echo "t8 $b rc=$?"
 timeout 60 ./ar_$b -t 16 -b 2K -e 1M -f 8 -n 30 -w 5 --max-time 250ms --configs auto,Ring/Simple/1,Ring/Simple/2,Ring/Simple/4 > $O/t16_${b}_$pass.txt 2>&1; echo "t16 $b rc=$?"
done; done
timeout 100 ./ccl.race.test -test.run 'TestFold|TestMatrixUnfolded|TestOversubscribed8x4|TestDestroyLeaves' -test.count=1 > $O/race.txt 2>&1; echo "race rc=$?"; tail -2 $O/race.txt
cd $O && tar czf r.tgz *.txt && rm -f *.txt
