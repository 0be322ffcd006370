#!/usr/bin/env bash
# trace-overhead.sh: what --trace-steps costs a perf binary, side by side.
# Alternating passes of allreduce -g 2: at 8 B off, every operation traced
# (--trace-every 1) and one in 32 (--trace-every 32); at 1 MiB off and
# every operation. Prints "SIZE VARIANT us" lines (out-of-place time).
#
#   B=path/to/allreduce_perf P=5 scripts/trace-overhead.sh
set -euo pipefail
B=${B:-allreduce_perf}
P=${P:-5}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
for _ in $(seq "$P"); do
  for v in off e1 e32; do
    case $v in
      off) a=() ;;
      e1) a=(--trace-steps "$D/t.json" --trace-every 1) ;;
      e32) a=(--trace-steps "$D/t.json" --trace-every 32) ;;
    esac
    echo "8B $v $("$B" -g 2 -b 8 -e 8 -n 4000 -w 400 -c 0 "${a[@]}" | awk '$1==8 {print $6}')"
  done
  for v in off e1; do
    case $v in
      off) a=() ;;
      e1) a=(--trace-steps "$D/t.json" --trace-every 1) ;;
    esac
    echo "1M $v $("$B" -g 2 -b 1M -e 1M -n 200 -w 20 -c 0 "${a[@]}" | awk '$1==1048576 {print $6}')"
  done
done
