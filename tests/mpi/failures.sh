#!/usr/bin/env bash
# tests/mpi/failures.sh — bad launches and failing ranks of executables under mpirun.
#
# Each case must exit non-zero with its message printed once (errors every rank
# sees) or by the failing rank, leave no output file or temporary behind, and
# end within a time bound (no hang). A rank killed by a signal must end the job.
# Usage: failures.sh SPMDC MPIRUN SOURCE_DIR. Exits 77 (skip) without mpirun.
set -u
SPMDC=$1; MPIRUN=$2; ROOT=$3
command -v "$MPIRUN" >/dev/null || { echo "$MPIRUN not found: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers may refuse process_vm_readv
MPI=("$MPIRUN" --oversubscribe)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }
# expect NAME STATUS FRAGMENT COUNT SECONDS -- command...: exit status STATUS ("nonzero"
# for any), FRAGMENT exactly COUNT times on stderr ("+" for at least once), within SECONDS.
expect() {
  local name=$1 status=$2 fragment=$3 count=$4 bound=$5; shift 6
  local start=$SECONDS
  timeout -k 5 "$bound" "$@" >"$W/out" 2>"$W/err"; local rc=$?
  local seen; seen=$(grep -cF -- "$fragment" "$W/err")
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    fail "$name: still running after ${bound}s"
  elif [[ $status == nonzero && $rc -eq 0 ]] || [[ $status != nonzero && $rc -ne $status ]]; then
    fail "$name: exit $rc (want $status)"; cat "$W/err"
  elif [[ $count == + && $seen -lt 1 ]] || [[ $count != + && $seen -ne $count ]]; then
    fail "$name: \`$fragment\` printed $seen times (want $count)"; cat "$W/err"
  else
    echo "ok   $name ($((SECONDS - start))s)"
  fi
}
no_outputs() {  # no final output and no temporary left in $W/o
  if [[ -n "$(ls -A "$W/o")" ]]; then fail "$1: files left: $(ls "$W/o")"; rm -f "$W/o"/*; fi
}

"$SPMDC" build "$ROOT/tests/mpi/programs/divide.spmd" --fn divide --target cpu -o "$W/divide" &&
  "$SPMDC" build "$ROOT/tests/mpi/programs/single.spmd" --target cpu -o "$W/single" ||
  { echo "FAIL: cannot build"; exit 1; }
mkdir "$W/o" "$W/adir"
"${PYTHON:-python3}" - "$W" <<'PY'
import sys, numpy as np
w = sys.argv[1]
np.save(w + '/n_ok.npy', np.arange(1, 9, dtype=np.int32))
np.save(w + '/n_zero.npy', np.array([1, 2, 3, 4, 0, 6, 7, 8], dtype=np.int32))  # 0 on position 2
np.save(w + '/n_bad.npy', np.zeros(7, dtype=np.int32))
PY
D=("$W/divide" --fn divide)

# Launches every rank rejects alike: one message, exit 1, nothing written.
expect world-size 1 "this MPI job has 3 processes but \`divide\` runs on a mesh of 4" 1 60 -- \
  "${MPI[@]}" -np 3 "${D[@]}" --random 1 --out-dir "$W/o"
no_outputs world-size
expect missing-input 1 "cannot read input \`n\`" 1 60 -- \
  "${MPI[@]}" -np 4 "${D[@]}" --in n="$W/nope.npy" --out-dir "$W/o"
no_outputs missing-input
expect wrong-shape 1 "must be i32[8] @ P(i)" 1 60 -- \
  "${MPI[@]}" -np 4 "${D[@]}" --in n="$W/n_bad.npy" --out-dir "$W/o"
no_outputs wrong-shape
# A missing --out-dir is created (every rank tries: mkdir -p is safe to race); one through
# a file cannot be.
expect out-dir-not-directory 1 "it exists and is not a directory" 1 60 -- \
  "${MPI[@]}" -np 4 "${D[@]}" --in n="$W/n_ok.npy" --out-dir "$W/n_ok.npy/out"
# The second output is a directory: refused before anything is written
# (docs/files.md), so neither output appears and no temporary is left.
expect unwritable-output 1 "cannot write output \`out1\` to \`$W/adir\`: it is a directory" 1 60 -- \
  "${MPI[@]}" -np 4 "${D[@]}" --in n="$W/n_ok.npy" --out out0="$W/o/a.npy" --out out1="$W/adir"
no_outputs unwritable-output
[[ -n "$(ls -A "$W/adir")" ]] && fail "unwritable-output: wrote into the directory"
expect bad-option 1 "unknown argument \`--nope\`" 1 60 -- "${MPI[@]}" -np 4 "${D[@]}" --nope
expect help 0 "" 0 60 -- "${MPI[@]}" -np 4 "${D[@]}" --help
[[ $(grep -c "^Usage:" "$W/out") -eq 1 ]] || fail "help: printed $(grep -c '^Usage:' "$W/out") times"
grep -q "divide(n: i32\[8\] @ P(i)) on mesh (i: 4)" "$W/out" || fail "help: no mesh in the function list"

# Ranks started with different arguments (an MPMD launch): other --iters would
# leave ranks waiting in a collective, other --random seeds would mix inputs.
# Every rank refuses at start-up, one message, no hang, nothing written.
expect mismatched-iters 1 "were started with different arguments: rank 0 with" 1 60 -- \
  "${MPI[@]}" -np 2 "${D[@]}" --random 1 --iters 3 --out-dir "$W/o" : \
  -np 2 "${D[@]}" --random 1 --iters 5 --out-dir "$W/o"
grep -qF "rank 2 with \`--fn divide --random 1 --iters 5" "$W/err" ||
  fail "mismatched-iters: the differing rank is not named: $(cat "$W/err")"
no_outputs mismatched-iters
expect mismatched-seeds 1 "were started with different arguments" 1 60 -- \
  "${MPI[@]}" -np 3 "${D[@]}" --random 1 --out-dir "$W/o" : -np 1 "${D[@]}" --random 2 \
  --out-dir "$W/o"
no_outputs mismatched-seeds

# The same program runs when launched right, outputs written once (into a new --out-dir).
rmdir "$W/o"
expect good-run 0 "" 0 60 -- "${MPI[@]}" -np 4 "${D[@]}" --in n="$W/n_ok.npy" --out-dir "$W/o"
grep -q "out0: i32\[\] (global) =" "$W/out" && [[ $(grep -c "(global) =" "$W/out") -eq 2 ]] ||
  fail "good-run: outputs not printed once: $(cat "$W/out")"
"${PYTHON:-python3}" -c "
import numpy as np, sys
n = np.arange(1, 9, dtype=np.int32)
assert int(np.load('$W/o/out0.npy')) == int(sum(100 // n)), 'out0'
assert (np.load('$W/o/out1.npy') == 2 * n).all(), 'out1'" || fail "good-run: wrong outputs"
rm -f "$W/o"/*

# A run-time error on one rank while the others wait in a collective: that
# rank's message, a non-zero exit, no hang, no output.
expect rank-error nonzero "rank 2 of 4 (mesh position (i: 2)): while running \`divide\`" 1 60 -- \
  "${MPI[@]}" -np 4 "${D[@]}" --in n="$W/n_zero.npy" --out-dir "$W/o"
grep -q "division by zero" "$W/err" || fail "rank-error: no reason given"
no_outputs rank-error

# A singleton process (no launcher) with --executor mpi: runs a 1-position mesh,
# and refuses a larger one with the launch that would work.
expect singleton 0 "" 0 60 -- "$W/single" --executor mpi --random 3
expect singleton-too-small 1 "start it with \`mpirun -np 4\`" 1 60 -- \
  "${D[@]}" --executor mpi --random 3

# Killing one rank of a running job ends the whole job, non-zero, within a bound.
start=$SECONDS
"${MPI[@]}" -np 4 "$W/divide" --fn spin --random 1 -q --iters 1000000 >"$W/out" 2>"$W/err" &
job=$!
ranks=""
for _ in $(seq 100); do  # wait until all four ranks exist and have started computing
  ranks=$(pgrep -P "$job" || true)
  [[ $(echo "$ranks" | wc -w) -eq 4 ]] && break
  sleep 0.1
done
sleep 2
victim=$(echo "$ranks" | sed -n 3p)
if [[ -z "$victim" ]] || ! kill -0 "$job" 2>/dev/null; then
  fail "killed-rank: the job did not start ($(cat "$W/err"))"
else
  kill -KILL "$victim"
  for _ in $(seq 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$job" 2>/dev/null; then
    fail "killed-rank: job still running 30 s after a rank was killed"
    kill -KILL "$job" $ranks 2>/dev/null
  else
    wait "$job"; rc=$?
    if [[ $rc -eq 0 ]]; then fail "killed-rank: exit 0"; else
      echo "ok   killed-rank (exit $rc, ended $((SECONDS - start))s after start)"; fi
  fi
fi
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
