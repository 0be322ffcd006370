#!/bin/bash
# session 22, call 1: channels past the cores across processes, folded (new) against not (old a733803)
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
O=$OUT
nproc; lscpu | grep -E "Model name|^CPU\(s\)"
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
B="-b 2K -e 1M -f 8 -n 30 -w 5 -c 0"
for pass in 1 2; do
  for np in 8 16; do
    for nc in 1 2 4; do
      [ $np = 8 ] && [ $nc = 2 ] && continue
      for b in old new; do
        echo "pass$pass ${b} np$np ch$nc $(GCCL_ALGO=Ring GCCL_PROTO=Simple GCCL_NCHANNELS=$nc timeout 60 ./ar_$b --np $np $B 2>&1 | col)"
      done
    done
  done
done > $O/np.txt
cat $O/np.txt
# auto, new only, to see nothing moved where nothing folds
for np in 8 16; do echo "auto np$np $(timeout 60 ./ar_new --np $np -b 8 -e 1M -f 8 -n 100 -w 10 -c 0 2>&1 | col)"; done >> $O/np.txt
timeout 60 ./ar_new --np 8 -b 8 -e 1M -f 8 -n 5 -w 1 -c 1 --nchannels 1,4 > $O/check.txt 2>&1; echo "check rc=$? $(grep 'Out of bounds' $O/check.txt | head -2 | tr '\n' ' ')"
timeout 150 ./ccl.test -test.run 'TestMultiProc|TestRemoteKick|TestFold|TestMatrixUnfolded' -test.count=1 > $O/tests.txt 2>&1; echo "tests rc=$?"; tail -3 $O/tests.txt
timeout 150 ./ccl.race.test -test.run 'TestMultiProcFolded|TestMultiProcOneDriver|TestRemoteKick' -test.count=1 > $O/race.txt 2>&1; echo "race rc=$?"; tail -3 $O/race.txt
cd $O && tar czf r.tgz *.txt && rm -f *.txt
