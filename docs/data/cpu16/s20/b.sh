#!/bin/bash
# session 20, call 2: in-process -t N (second pass, 8 ranks' first), auto with the Xeon's fitted
# constants beside; then 8 and 16 processes against Open MPI, 512 B-32 KiB, 2 passes
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
O=$OUT/r; mkdir -p $O
CFG=auto,OneShot/LL/1,TwoShot/LL/1,Ring/Simple/1,Ring/Simple/4,Ring/LL128/1,Tree/Simple/1
for n in 4 8 16; do
  ./allreduce_perf -t $n -g 1 -b 8 -e 128K -f 4 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 250ms --out $O/small2_n$n.jsonl --configs $CFG > /dev/null 2>&1; echo "n=$n rc=$?"
  GCCL_MODEL_FILE=s20/xeon16_model.json ./allreduce_perf -t $n -g 1 -b 8 -e 128K -f 4 -n 50 -w 20 -c 0 -a 3 --out-of-place-only --interleave \
    --precision 3% --max-time 250ms --out $O/fit_n$n.jsonl --configs $CFG > /dev/null 2>&1; echo "fit n=$n rc=$?"
done
mpicc -O2 -o mpi_perf mpi_perf.c
MPI="mpirun --allow-run-as-root --oversubscribe"
B="-n 300 -w 30 -z 2 -c 0 -a 3 -N 3 --out-of-place-only -b 512 -e 32K -f 4"
col() { awk '!/^#/ && NF>=8 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $6} END {print ""}'; }
for pass in 1 2; do
  echo "== pass $pass"
  for np in 8 16; do
    echo "mpi_np$np $(for s in 512 2048 8192 32768; do $MPI -np $np ./mpi_perf allreduce $s $s 5 | awk -v s=$s '!/^#/ && $1==s {printf "%s:%s ", s, $3}'; done)"
    echo "auto_np$np $(./allreduce_perf --np $np $B 2>&1 | col)"
    echo "two_np$np $(GCCL_ALGO=TwoShot ./allreduce_perf --np $np $B 2>&1 | col)"
    echo "one_np$np $(GCCL_ALGO=OneShot ./allreduce_perf --np $np $B 2>&1 | col)"
    echo "ring_np$np $(GCCL_ALGO=Ring GCCL_PROTO=Simple ./allreduce_perf --np $np $B 2>&1 | col)"
  done
done | tee $O/np.txt
./allreduce_perf --np 16 -b 8 -e 256K -f 8 -n 5 -w 1 -c 1 --algo TwoShot -d all -o sum > $O/np_check.txt 2>&1; echo "np check rc=$? $(grep 'Out of bounds' $O/np_check.txt)"
cd $OUT && tar czf r.tgz r && rm -rf r
