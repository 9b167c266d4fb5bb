#!/usr/bin/env bash
# tests/backend/error_paths.sh — user errors of `spmdc build` and of built executables.
#
# Each case must print a clear message (checked by a fragment), exit non-zero,
# and leave no output file behind. Usage: error_paths.sh SPMDC SOURCE_DIR
set -u
SPMDC=$1; ROOT=$2
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
expect() {  # expect NAME STATUS FRAGMENT -- command...
  local name=$1 status=$2 fragment=$3; shift 4
  "$@" >"$W/out" 2>"$W/err"; local rc=$?
  if [[ $rc -ne $status ]] || ! grep -qF -- "$fragment" "$W/err"; then
    echo "FAIL $name: exit $rc (want $status), stderr:"; cat "$W/err"; fails=$((fails+1))
  else
    echo "ok   $name"
  fi
}
S=$ROOT/samples/seed/example1.spmd
"$SPMDC" build "$S" --target cpu -o "$W/ex1" || { echo "FAIL: cannot build"; exit 1; }
"${PYTHON:-python3}" - "$W" <<'PY'
import struct, sys
def npy(path, shape):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ''.join(f'{d}, ' for d in shape)
    hdr = hdr.ljust(118) + '\n'
    n = 1
    for d in shape: n *= d
    open(path, 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode() + b'\0' * (4 * n))
npy(sys.argv[1] + '/x_ok.npy', (32, 3)); npy(sys.argv[1] + '/x_bad.npy', (30, 3))
PY
expect missing-input 1 "missing input \`x\`" -- "$W/ex1"
expect wrong-shape 1 "must be f32[32, 3] @ P(i)" -- "$W/ex1" --in x="$W/x_bad.npy"
expect missing-file 1 "cannot read input \`x\`" -- "$W/ex1" --in x="$W/nope.npy"
expect unknown-input 1 "has no parameter named \`y\`" -- "$W/ex1" --in y="$W/x_ok.npy"
# (A missing --out-dir is created: tests/backend/build_cli.sh. Not through a file.)
expect out-dir-not-directory 1 "it exists and is not a directory" -- "$W/ex1" --random 1 --out-dir "$W/x_ok.npy/out"
expect out-parent-missing 1 "does not exist" -- "$W/ex1" --random 1 --out f1="$W/no/f1.npy"
expect unknown-output 1 "has no output named" -- "$W/ex1" --random 1 --out zz="$W/zz.npy"
expect bad-iters 1 "--iters expects an integer" -- "$W/ex1" --random 1 --iters x
expect unknown-fn 1 "no function named \`nope\`" -- "$W/ex1" --random 1 --fn nope
# Nothing may be written when a later output fails.
expect partial 1 "does not exist" -- "$W/ex1" --random 1 --out f1="$W/f1.npy" --out f1="$W/no/f1.npy"
[[ -e "$W/f1.npy" ]] && { echo "FAIL partial: f1.npy written"; fails=$((fails+1)); }
ls "$W" | grep -q tmp && { echo "FAIL: temporary files left"; fails=$((fails+1)); }
# spmdc build itself.
expect build-out-dir 1 "does not exist" -- "$SPMDC" build "$S" --target cpu -o "$W/no/such/exe"
expect build-target 1 "unknown --target" -- "$SPMDC" build "$S" --target tpu -o "$W/e"
expect build-fn 1 "nope" -- "$SPMDC" build "$ROOT/samples/dp_loss.spmd" --target cpu --fn nope -o "$W/e"
expect build-bad-program 1 "error" -- "$SPMDC" build "$ROOT/tests/golden/diagnostics/fail_unknown_name.spmd" --target cpu -o "$W/e"
[[ -e "$W/e" ]] && { echo "FAIL: executable written by a failed build"; fails=$((fails+1)); }
if [[ "${SPMDC_NO_CUDA:-0}" == 1 ]]; then
  expect build-no-cuda 1 "needs the CUDA toolkit" -- "$SPMDC" build "$S" --target cuda -o "$W/e"
fi
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
