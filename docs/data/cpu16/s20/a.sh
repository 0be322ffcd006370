#!/bin/bash
# session 20, call 1: two-shot allreduce on the 16-core host: in-process -t N interleaved, then correctness
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
nproc; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket" 
O=$OUT
for n in 2 4 8 16; do
  ./allreduce_perf -t $n -g 1 -b 8 -e 128K -f 4 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 250ms --out $O/small_n$n.jsonl \
    --configs auto,OneShot/LL/1,TwoShot/LL/1,Ring/Simple/1,Ring/Simple/4,Ring/LL128/1,Tree/Simple/1 > $O/small_n$n.txt 2>&1
  echo "n=$n rc=$?"
done
# correctness on 16 cores: the two-shot matrix and data checks through perf
./ccl.test -test.run 'TestMatrixTwoShot|TestTwoShot|TestOneShotMixed' -test.count=1 > $O/tests.txt 2>&1; echo "tests rc=$?"; tail -3 $O/tests.txt
for n in 3 16; do ./allreduce_perf -t $n -b 8 -e 1M -f 8 -n 3 -w 1 -c 1 --algo TwoShot -d all -o all > $O/check_n$n.txt 2>&1; echo "check n=$n rc=$? $(grep -c 'wrong\|ERROR' $O/check_n$n.txt) $(grep -i 'out of bounds\|Avg bus' $O/check_n$n.txt | head -2)"; done
