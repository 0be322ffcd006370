#!/usr/bin/env bash
# scripts/install.sh: build every perf binary and tune as static binaries
# (CGO_ENABLED=0) into PREFIX/bin, under our names (allreduce_perf, ...) and
# nccl-tests' (all_reduce_perf, ...), so that scripts written for nccl-tests
# run unchanged with PREFIX/bin on their PATH. `make install PREFIX=...`
# calls it.
#
#   scripts/install.sh [--force] [PREFIX]     PREFIX defaults to $PREFIX, else /usr/local
#
# An nccl-tests name that differs from ours is a symbolic link to our binary
# (it prints its nccl-tests name whatever it is called). A file in the way
# that is not one of ours (a real nccl-tests build, say) is left alone and the
# install stops, unless --force. Set GO to choose the go command.
set -euo pipefail

usage() { echo "usage: scripts/install.sh [--force] [PREFIX]   (binaries go to PREFIX/bin; default PREFIX /usr/local)"; }
force=0
args=()
for a in "$@"; do
  case "$a" in
    -h|--help) usage; exit 0 ;;
    --force) force=1 ;;
    -*) echo "install.sh: unknown option $a" >&2; usage >&2; exit 2 ;;
    *) args+=("$a") ;;
  esac
done
if [ "${#args[@]}" -gt 1 ]; then
  echo "install.sh: one PREFIX at most (got ${args[*]})" >&2; usage >&2; exit 2
fi
prefix=${args[0]:-${PREFIX:-/usr/local}}
bin="$prefix/bin"

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
if ! "$GO" version >/dev/null 2>&1; then
  echo "install.sh: no go command at '$GO': put go on PATH or set GO=/path/to/go" >&2; exit 2
fi
cd "$(dirname "$0")/.."

# nccl-tests' names that differ from ours; every other perf binary already
# has its nccl-tests name (alltoall_perf, sendrecv_perf, ...).
declare -A alias=(
  [allreduce_perf]=all_reduce_perf
  [allgather_perf]=all_gather_perf
  [reducescatter_perf]=reduce_scatter_perf
)
cmds=()
for d in cmd/*/; do cmds+=("$(basename "$d")"); done

# ours: PATH is absent or a binary of this module (through any link).
ours() {
  { [ ! -e "$1" ] && [ ! -L "$1" ]; } ||
    "$GO" version -m "$1" 2>/dev/null | grep -Eq '^[[:space:]]+path[[:space:]]+github\.com/gccl/gccl/cmd/'
}
foreign=()
for c in "${cmds[@]}"; do
  for name in "$c" ${alias[$c]:-}; do
    ours "$bin/$name" || foreign+=("$bin/$name")
  done
done
if [ "${#foreign[@]}" -gt 0 ] && [ "$force" = 0 ]; then
  echo "install.sh: these files are not gccl binaries and would be replaced:" >&2
  printf '  %s\n' "${foreign[@]}" >&2
  echo "install.sh: choose another PREFIX, or pass --force (make install FORCE=1) to replace them" >&2
  exit 1
fi

mkdir -p "$bin"
CGO_ENABLED=0 "$GO" build -trimpath -o "$bin/" ./cmd/...
for c in "${cmds[@]}"; do
  if [ -n "${alias[$c]:-}" ]; then
    rm -f "$bin/${alias[$c]}"
    ln -s "$c" "$bin/${alias[$c]}"
  fi
done
echo "installed into $bin: ${cmds[*]} and the nccl-tests names ${alias[*]}"
