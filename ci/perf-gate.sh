#!/usr/bin/env bash
# ci/perf-gate.sh: the performance regression gate for CI.
#
# Runs a short sweep (several processes of a perf binary), gates it against a
# baseline with `tune gate`, and writes the reports CI systems show: Markdown
# (appended to $GITHUB_STEP_SUMMARY when set), JUnit XML, JSON, and plots
# (`tune plot`, when this build has it). Exit status: 0 pass, 1 regression,
# 2 bad input or a sweep that failed.
#
# In a gccl checkout with Go, with no options, it runs this project's own gate
# (what .ci/run does): it builds tune and the perf binary from the checkout and
# sweeps the embedded stack, 2 ranks, against ci/baseline/embedded.jsonl,
# normalised by copy bandwidth, with thresholds calibrated for a shared 2-core
# machine. Anywhere else (a project's own CI with only the gccl binaries) it
# takes tune and C_perf from --bin-dir or PATH, and --baseline is required;
# pick --threshold for your machines. Relative paths are the caller's.
#
#   ci/perf-gate.sh                       gate a fresh sweep against the baseline
#   ci/perf-gate.sh --update-baseline     record a fresh sweep as the new baseline (then commit it)
#   ci/perf-gate.sh --candidate r.jsonl   gate existing result files (perf --out, nccl-tests logs or -J JSON,
#                                          go test -bench output; logs and benchmarks without copy_GB/s
#                                          carry no copy bandwidth: add --normalize none)
#   ci/perf-gate.sh -- -g 4 -b 1K -e 64M -f 4 --precision 2% -N 3 --out-of-place-only
#                                         another sweep (perf flags after --; --out is added)
#   perf-gate.sh --bin-dir /opt/gccl/bin --baseline perf/baseline.jsonl --threshold 10%
#                                         outside a checkout: prebuilt binaries, your baseline
#
# Options (environment variable in brackets):
#   --baseline FILE     [GATE_BASELINE]    baseline results (default in a checkout: ci/baseline/embedded.jsonl;
#                                          required elsewhere)
#   --bin-dir DIR       [GATE_BIN_DIR]     take tune and C_perf from DIR (default: build them from the
#                                          checkout this script is in, else find them on PATH)
#   --out DIR           [GATE_OUT]         reports and the sweep's files (default perf-gate)
#   --threshold T       [GATE_THRESHOLD]   tune gate --threshold: percent, or size bands in bytes
#                                          (default 8B-64K=50%,64K-=40%, this project's shared 2-core VM)
#   --normalize N       [GATE_NORMALIZE]   copy or none (default copy: runs carry ref_copy_gbps)
#   --metric M          [GATE_METRIC]      busbw or time (default busbw)
#   --runs N            [GATE_RUNS]        processes of the sweep, each with the perf flags' -N cycles (default 8)
#   --pause S           [GATE_PAUSE]       seconds between the processes (default 0; spread a baseline over time)
#   --confirm N         [GATE_CONFIRM]     on a regression, sweep again up to N times and gate all the runs
#                                          together: a transient slowdown of a shared machine dilutes, a real
#                                          one stays (default 1; 0 for none)
#   --iter-samples N    [GATE_ITER_SAMPLES] per-iteration samples per record kept in a new baseline (default 0:
#                                          none, keys are judged on runs; tune baseline --iter-samples)
#   --collective C      [GATE_COLLECTIVE]  which perf binary: C_perf, e.g. allgather (default allreduce)
#   --gate-flags "..."  [GATE_FLAGS]       more tune gate flags, e.g. "--require-all --min-size 1K" (default none)
#   --candidate FILE    gate these files instead of sweeping (repeatable; no perf binary needed)
#   --update-baseline   write the sweep to the baseline file (tune baseline --force) instead of gating
#   -h, --help          this text
#   -- PERF-FLAGS       [GATE_PERF_FLAGS]  the sweep (default: -t 2 -b 8 -e 4M -f 8 --precision 2%
#                                          --max-time 1s --out-of-place-only -N 3)
#
# Refresh the self-gate's baseline on purpose (a change that makes the stack
# slower by design, or a new CI machine), spread over ten minutes of the
# machine's moods, then review the printed comparison and commit the file:
#   ci/perf-gate.sh --update-baseline --runs 30 --pause 20
set -euo pipefail

# repo: the gccl checkout this script sits in, if it is in one.
repo=$(cd "$(dirname "$0")/.." && pwd)
grep -qs '^module github.com/gccl/gccl$' "$repo/go.mod" || repo=

# The self-gate's settings. Calibrated on the shared 2-core CI machine (see
# README "Regression gate"): 8 processes x 3 cycles = 24 runs per key;
# thresholds above the largest drop seen between fresh sweeps and the
# baseline over quiet and loaded hours, with margin. Significance (a
# Mann-Whitney U test over the runs) keeps run-to-run noise from failing.
DEFAULT_PERF_FLAGS="-t 2 -b 8 -e 4M -f 8 --precision 2% --max-time 1s --out-of-place-only -N 3"
DEFAULT_THRESHOLD="8B-64K=50%,64K-=40%"

baseline=${GATE_BASELINE:-}
bin_dir=${GATE_BIN_DIR:-}
out=${GATE_OUT:-perf-gate}
threshold=${GATE_THRESHOLD:-$DEFAULT_THRESHOLD}
normalize=${GATE_NORMALIZE:-copy}
metric=${GATE_METRIC:-busbw}
runs=${GATE_RUNS:-8}
pause=${GATE_PAUSE:-0}
confirm=${GATE_CONFIRM:-1}
iter_samples=${GATE_ITER_SAMPLES:-0}
coll=${GATE_COLLECTIVE:-allreduce}
gate_flags=${GATE_FLAGS:-}
perf_flags=${GATE_PERF_FLAGS:-$DEFAULT_PERF_FLAGS}
update=0
candidates=()

die() { echo "perf-gate: $*" >&2; exit 2; }
need() { [ $# -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline) need "$@"; baseline=$2; shift 2 ;;
    --bin-dir) need "$@"; bin_dir=$2; shift 2 ;;
    --out) need "$@"; out=$2; shift 2 ;;
    --threshold) need "$@"; threshold=$2; shift 2 ;;
    --normalize) need "$@"; normalize=$2; shift 2 ;;
    --metric) need "$@"; metric=$2; shift 2 ;;
    --runs) need "$@"; runs=$2; shift 2 ;;
    --pause) need "$@"; pause=$2; shift 2 ;;
    --confirm) need "$@"; confirm=$2; shift 2 ;;
    --iter-samples) need "$@"; iter_samples=$2; shift 2 ;;
    --collective) need "$@"; coll=$2; shift 2 ;;
    --gate-flags) need "$@"; gate_flags=$2; shift 2 ;;
    --candidate) need "$@"; candidates+=("$2"); shift 2 ;;
    --update-baseline) update=1; shift ;;
    --) shift; perf_flags="$*"; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs $runs: want a positive count"
[[ "$pause" =~ ^[0-9]+$ ]] || die "--pause $pause: want whole seconds"
[[ "$confirm" =~ ^[0-9]+$ ]] || die "--confirm $confirm: want a count"
[ "$update" = 0 ] || [ ${#candidates[@]} = 0 ] || die "--update-baseline records a fresh sweep; it takes no --candidate"

if [ -z "$baseline" ]; then
  [ -n "$repo" ] || die "give --baseline FILE: outside a gccl checkout there is no default baseline (record one with --update-baseline --baseline FILE)"
  baseline=$repo/ci/baseline/embedded.jsonl
fi
[ "$update" = 1 ] || [ -f "$baseline" ] || die "no baseline $baseline (record one: $0 --update-baseline --baseline $baseline)"

mkdir -p "$out/plots"
rm -f "$out/gate.md" "$out/junit.xml" "$out/gate.json" "$out/candidate.jsonl" "$out"/plots/*.png # no stale reports
start=$SECONDS

# The binaries: from --bin-dir; else built from this checkout when Go is
# there; else from PATH. perf is needed only to sweep.
export PATH="$PATH:/usr/local/go/bin"
need_perf=0
[ ${#candidates[@]} -gt 0 ] || need_perf=1
if [ -n "$bin_dir" ]; then
  tune=$bin_dir/tune perf=$bin_dir/${coll}_perf
  [ -x "$tune" ] || die "--bin-dir $bin_dir has no executable tune"
  [ "$need_perf" = 0 ] || [ -x "$perf" ] || die "--bin-dir $bin_dir has no executable ${coll}_perf (--collective $coll)"
elif [ -n "$repo" ] && command -v go > /dev/null; then
  mkdir -p "$out/bin"
  bin=$(cd "$out/bin" && pwd)
  echo "perf-gate: building tune and ${coll}_perf from $repo"
  (cd "$repo" && go build -o "$bin/" ./cmd/tune) || die "go build ./cmd/tune failed"
  if [ "$need_perf" = 1 ]; then
    (cd "$repo" && go build -o "$bin/" "./cmd/${coll}_perf") || die "go build ./cmd/${coll}_perf failed (--collective $coll)"
  fi
  tune=$bin/tune perf=$bin/${coll}_perf
else
  tune=$(command -v tune) || die "no tune on PATH: give --bin-dir DIR holding tune and ${coll}_perf (go build ./cmd/tune ./cmd/${coll}_perf)"
  perf=$(command -v "${coll}_perf") || [ "$need_perf" = 0 ] || die "no ${coll}_perf on PATH: give --bin-dir DIR (--collective $coll)"
fi

# sweep NAME: $runs processes of the perf binary into $out/NAME-*.jsonl,
# appended to candidates.
sweep() {
  local name=$1 i f st t0=$SECONDS
  rm -f "$out/$name"-*.jsonl "$out/$name"-*.txt
  echo "perf-gate: $name sweep, $runs processes of: ${coll}_perf $perf_flags"
  for i in $(seq 1 "$runs"); do
    [ "$i" = 1 ] || [ "$pause" = 0 ] || sleep "$pause"
    f="$out/$name-$i.jsonl"
    st=0
    # shellcheck disable=SC2086 # perf_flags is a list of flags
    "$perf" $perf_flags --out "$f" --force > "$out/$name-$i.txt" 2>&1 || st=$?
    if [ "$st" != 0 ]; then
      tail -20 "$out/$name-$i.txt" >&2
      die "the sweep failed (${coll}_perf exit status $st; its output: $out/$name-$i.txt)"
    fi
    if grep -q "Out of bounds values : [1-9]" "$out/$name-$i.txt"; then
      die "the sweep reports wrong results ($out/$name-$i.txt): a correctness failure, not a timing"
    fi
    candidates+=("$f")
  done
  echo "perf-gate: swept in $((SECONDS - t0)) s (load average now: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown))"
}

swept=0
if [ ${#candidates[@]} = 0 ]; then
  rm -f "$out"/confirm*-*.jsonl "$out"/confirm*-*.txt
  sweep candidate
  swept=1
fi

if [ "$update" = 1 ]; then
  mkdir -p "$(dirname "$baseline")"
  if [ -f "$baseline" ]; then
    echo "perf-gate: the fresh sweep against the old baseline (for the record; not a verdict):"
    # shellcheck disable=SC2086
    "$tune" gate --baseline "$baseline" --candidate "${candidates[@]}" --threshold "$threshold" \
      --normalize "$normalize" --metric "$metric" $gate_flags || true
  fi
  "$tune" baseline --output "$baseline" --force --iter-samples "$iter_samples" "${candidates[@]}"
  echo "perf-gate: new baseline $baseline; review and commit it (git add $baseline)"
  exit 0
fi

gate() {
  local st=0
  # shellcheck disable=SC2086 # gate_flags is a list of flags
  "$tune" gate --baseline "$baseline" --candidate "${candidates[@]}" \
    --threshold "$threshold" --normalize "$normalize" --metric "$metric" $gate_flags \
    --all --markdown "$out/gate.md" --junit "$out/junit.xml" --json "$out/gate.json" || st=$?
  return "$st"
}
rc=0
gate || rc=$?
round=0
while [ "$rc" = 1 ] && [ "$swept" = 1 ] && [ "$round" -lt "$confirm" ]; do
  round=$((round + 1))
  echo "perf-gate: regression; confirming with a fresh sweep ($round of $confirm), gated together with the first"
  sweep "confirm$round"
  rc=0
  gate || rc=$?
done
[ "$rc" -le 2 ] || rc=2
if [ "$round" -gt 0 ] && [ -f "$out/gate.md" ]; then
  printf '\nThe first sweep regressed; %d confirmation sweep(s) ran and all %d runs were gated together.\n' "$round" "${#candidates[@]}" >> "$out/gate.md"
fi

# Plots, when this build of tune draws them (issue "Plots"): the candidate
# against the baseline with the ratio panel, and the candidate's own curves.
if [ "$rc" != 2 ]; then
  if "$tune" plot --help > /dev/null 2>&1; then
    kind=busbw
    [ "$normalize" = copy ] && kind=norm
    # The shaded band: the threshold, or with size bands the last one's (the
    # largest sizes when the bands are written in ascending order).
    band=${threshold##*,}
    band=${band##*=}
    # One candidate file (tune baseline merges and checks), so that the
    # legends name one file, not every run's.
    if "$tune" baseline --output "$out/candidate.jsonl" --force "${candidates[@]}" > /dev/null &&
       "$tune" plot --output "$out/plots/compare.png" --kind "$kind" --median --force --baseline "$baseline" --threshold "$band" \
         --title "perf gate: candidate vs baseline" "$out/candidate.jsonl" > /dev/null &&
       "$tune" plot --output "$out/plots/busbw.png" --median --force "$out/candidate.jsonl" > /dev/null; then
      echo "perf-gate: plots in $out/plots/"
      printf '\nPlots: `compare.png` (candidate vs baseline, ratio panel) and `busbw.png` in the `%s/plots` artifact.\n' "$out" >> "$out/gate.md"
    else
      echo "perf-gate: warning: tune plot failed; no plots (the verdict stands)" >&2
    fi
  else
    echo "perf-gate: note: this build's tune has no plot command; no plots written"
  fi
fi

if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$out/gate.md" ]; then
  cat "$out/gate.md" >> "$GITHUB_STEP_SUMMARY"
fi
if [ "$rc" = 2 ]; then
  echo "perf-gate: bad input, no verdict (tune gate said why above); $((SECONDS - start)) s; exit 2"
else
  echo "perf-gate: reports in $out/ (gate.md, junit.xml, gate.json); $((SECONDS - start)) s; exit $rc"
fi
exit "$rc"
