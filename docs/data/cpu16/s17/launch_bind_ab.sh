#!/bin/bash
# session 17, call 5: 0a1c319 (new) vs 2613cdc (old), np 2..16, 8 B to 128 MiB allreduce, Open MPI beside; new --bind-to none too
cd "$(dirname "$0")"
mpicc -O2 -o mpi_perf mpi_perf.c
MPI="mpirun --allow-run-as-root --oversubscribe"
A="-n 5000 -w 500 -z 2 -c 0 -a 3 -N 3 --out-of-place-only -b 8 -e 8"
B="-n 200 -w 20 -z 2 -c 1 -a 3 -N 1 --out-of-place-only -b 512 -e 2M -f 8"
L="-n 5 -w 2 -z 2 -c 1 -a 3 -N 1 --out-of-place-only -b 32M -e 128M -f 4"
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $6} END {print ""}'; }
for pass in 1 2 3; do
  echo "== pass $pass"
  for np in 2 4 8 16; do
    echo "mpi$np $($MPI -np $np ./mpi_perf allreduce 8 8 5 | awk '!/^#/ && $1==8 {print "8:"$3}')"
    echo "old_np$np $(./allreduce_perf --np $np $A 2>&1 | col)"
    echo "new_np$np $(./allreduce_perf_new --np $np $A 2>&1 | col)"
    echo "newnb_np$np $(./allreduce_perf_new --np $np --bind-to none $A 2>&1 | col)"
  done
done
for pass in 1 2; do
  echo "== sizes pass $pass"
  for np in 4 8 16; do
    echo "mpi$np $(for s in 512 4096 32768 262144 2097152; do $MPI -np $np ./mpi_perf allreduce $s $s 5 | awk -v s=$s '!/^#/ && $1==s {printf "%s:%s ", s, $3}'; done)"
    echo "old_np$np $(./allreduce_perf --np $np $B 2>&1 | col)"
    echo "new_np$np $(./allreduce_perf_new --np $np $B 2>&1 | col)"
    echo "newnb_np$np $(./allreduce_perf_new --np $np --bind-to none $B 2>&1 | col)"
  done
done
echo "== large"
for np in 2 4 8 16; do
  echo "mpi$np $(for s in 33554432 134217728; do $MPI -np $np ./mpi_perf allreduce $s $s 3 | awk -v s=$s '!/^#/ && $1==s {printf "%s:%s ", s, $3}'; done)"
  echo "old_np$np $(./allreduce_perf --np $np $L 2>&1 | col)"
  echo "new_np$np $(./allreduce_perf_new --np $np $L 2>&1 | col)"
  echo "newnb_np$np $(./allreduce_perf_new --np $np --bind-to none $L 2>&1 | col)"
done
