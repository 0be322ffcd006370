#!/usr/bin/env bash
# Summarise `go test -bench AllReduce -count K` output (file $1): one row per
# sub-benchmark with the median over the K runs of us/op, busBW and copy().
set -euo pipefail
awk '
/^BenchmarkAllReduce\// {
  name=$1; sub("BenchmarkAllReduce/","",name); sub("-[0-9]+$","",name)
  for (i=1;i<=NF;i++) { if ($i=="us/op") u=$(i-1); if ($i=="busBW_GB/s") b=$(i-1); if ($i=="copy_GB/s") c=$(i-1) }
  U[name]=U[name] " " u; B[name]=B[name] " " b; C[name]=C[name] " " c
  if (!(name in seen)) { seen[name]=1; order[++n]=name }
}
function med(s,   a, k, i, j, t) {
  k=split(s, a, " ")
  for (i=1;i<=k;i++) for (j=i+1;j<=k;j++) if (a[j]+0 < a[i]+0) { t=a[i]; a[i]=a[j]; a[j]=t }
  return a[int((k+1)/2)]
}
END {
  printf "| config | us/op | busBW GB/s | copy() GB/s | busBW/copy |\n|---|---|---|---|---|\n"
  for (i=1;i<=n;i++) { nm=order[i]; u=med(U[nm]); b=med(B[nm]); c=med(C[nm])
    printf "| %s | %s | %s | %s | %.3f |\n", nm, u, b, c, (c>0? b/c : 0) }
}' "$1"
