#!/bin/bash
# session 21, call 6: the whole lib/ccl suite on 16 cores (final build), and the folded paths under the race detector
cd "$(dirname "$0")/.."
O=$OUT
s=$(date +%s); timeout 280 ./ccl.test -test.count=1 -test.timeout 270s > $O/full.txt 2>&1; echo "full rc=$? $(( $(date +%s) - s )) s"; tail -3 $O/full.txt
s=$(date +%s); timeout 200 ./ccl.race.test -test.short -test.run 'TestMatrix$|TestFold|TestMatrixUnfolded|TestOversubscribed8x4|TestDestroyLeaves|TestOtherWorlds|TestTimeoutAborts' -test.count=1 -test.timeout 190s > $O/race.txt 2>&1; echo "race rc=$? $(( $(date +%s) - s )) s"; tail -3 $O/race.txt
timeout 60 ./proto.race.test -test.count=1 > $O/proto.txt 2>&1; echo "proto race rc=$?"; tail -1 $O/proto.txt
cd $O && tar czf r.tgz *.txt && rm -f *.txt
