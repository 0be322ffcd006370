#!/bin/bash
# session 22, call 3: across processes, forced Ring/Simple channels, old a733803 against new
# (folding per process past its processors less one), 4 passes, -N 3 loops; then auto; then tests
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
O=$OUT
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
B="-b 2K -e 1M -f 8 -n 20 -w 3 -c 0 -N 3"
for pass in 1 2 3 4; do
  for cfg in 8:1 8:2 8:4 16:1 16:2 16:4 4:4; do
    np=${cfg%:*}; nc=${cfg#*:}
    for b in old new; do
      echo "pass$pass ${b} np$np ch$nc $(GCCL_ALGO=Ring GCCL_PROTO=Simple GCCL_NCHANNELS=$nc timeout 45 ./ar_$b --np $np $B 2>&1 | col)"
    done
  done
done > $O/np3.txt
for pass in 1 2; do for np in 2 4 8 16; do for b in old new; do
  echo "pass$pass ${b} auto np$np $(timeout 45 ./ar_$b --np $np -b 8 -e 1M -f 8 -n 50 -w 5 -c 0 -N 3 2>&1 | col)"
done; done; done > $O/auto3.txt
timeout 60 ./ar_new --np 8 -b 8 -e 1M -f 8 -n 5 -w 1 -c 1 --nchannels 1,2,4 > $O/check.txt 2>&1; echo "check rc=$? $(grep 'Out of bounds' $O/check.txt | head -2 | tr '\n' ' ')"
timeout 150 ./ccl.test -test.run 'TestMultiProc|TestRemoteKick|TestFold|TestProcessFolding|TestMatrixUnfolded' -test.count=1 > $O/tests.txt 2>&1; echo "tests rc=$?"; tail -3 $O/tests.txt
timeout 150 ./ccl.race.test -test.run 'TestMultiProcFolded|TestMultiProcOneDriver|TestRemoteKick' -test.count=1 > $O/race.txt 2>&1; echo "race rc=$?"; tail -3 $O/race.txt
cd $O && tar czf r.tgz *.txt && rm -f *.txt
