#!/bin/bash
# session 22, call 8: the floor side by side (FloorSideBySide: 2 ranks, 8 B / 64 B / 1 KiB against the
# spin round trip), a733803 (old.test) against this build (new.test), 5 alternating passes; perf -t 4
# and --np 2 small sizes, old against new, 3 passes; Open MPI's 2 processes beside them
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
for p in 1 2 3 4 5; do for b in old new; do
  ./$b.test -test.run '^$' -test.bench 'FloorSideBySide' -test.benchtime 20x 2>&1 | grep Floor | awk -v b=$b -v p=$p '{print "pass" p, b, $1, $3, $5, $7}'
done; done > $OUT/sbs.txt
cat $OUT/sbs.txt
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s/%s ", $1, $6, $10} END {print ""}'; }
mpicc -O2 -o mpi_perf mpi_perf.c 2>/dev/null
for pass in 1 2 3; do
  for b in old new; do
    echo "pass$pass ${b} t4 $(timeout 60 ./ar_$b -t 4 -b 64 -e 4K -f 2 -n 2000 -w 200 -c 0 -N 2 2>&1 | col)"
    echo "pass$pass ${b} np2 $(timeout 60 ./ar_$b --np 2 -b 64 -e 4K -f 2 -n 2000 -w 200 -c 0 -N 2 2>&1 | col)"
  done
  [ -x mpi_perf ] && echo "pass$pass mpi np2 $(timeout 60 mpirun --allow-run-as-root --bind-to core -np 2 ./mpi_perf allreduce 64 4096 2000 2>&1 | awk "!/^#/ && NF>=4 {printf \"%s:%s \", \$1, \$3}")"
done > $OUT/small.txt
cat $OUT/small.txt | cut -c1-400
cd $OUT && tar czf r.tgz *.txt && rm -f *.txt
