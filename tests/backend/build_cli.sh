#!/usr/bin/env bash
# tests/backend/build_cli.sh — the command line of `spmdc build` and of built executables:
# the default target (cuda only when a GPU is visible), -q, building every shmap of a file
# without --fn, and the executable's --fn / --version / --help.
# Usage: build_cli.sh SPMDC SOURCE_DIR   (SPMDC_NO_CUDA=1 when spmdc was configured without CUDA)
set -u
SPMDC=$1; ROOT=$2
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }
ok() { echo "ok   $*"; }

# 1. Default target, decided independently of spmdc: cuda only with CUDA configured and a GPU
#    that nvidia-smi lists; the note says which.
want=cpu
if [[ "${SPMDC_NO_CUDA:-0}" != 1 ]] && command -v nvidia-smi >/dev/null &&
   nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then want=cuda; fi
S=$ROOT/samples/seed/example1.spmd
"$SPMDC" build "$S" --emit-source "$W/ex1.src" 2>"$W/err" || fail "emit-source: $(cat "$W/err")"
if grep -q "^spmdc: note: building for target $want (" "$W/err" && [[ $(wc -l <"$W/err") -eq 1 ]]; then
  ok "default target $want: $(cat "$W/err")"
else
  fail "default target: want one note naming $want, got: $(cat "$W/err")"
fi
executor=$([[ $want == cuda ]] && echo cu::cuda_executor || echo rt::cpu_executor)
grep -q "$executor(functions(), bodies)" "$W/ex1.src" || fail "emitted source is not for $want"
# CUDA_VISIBLE_DEVICES= hides every GPU from the CUDA driver: cpu on any machine.
CUDA_VISIBLE_DEVICES= "$SPMDC" build "$S" --emit-source "$W/ex1.src" 2>"$W/err"
grep -q "^spmdc: note: building for target cpu (" "$W/err" && ok "CUDA_VISIBLE_DEVICES= gives cpu" ||
  fail "CUDA_VISIBLE_DEVICES=: $(cat "$W/err")"
# -q and an explicit --target print nothing.
for flags in "-q" "--target cpu"; do
  "$SPMDC" build "$S" $flags --emit-source "$W/ex1.src" 2>"$W/err"
  [[ -s "$W/err" ]] && fail "$flags printed: $(cat "$W/err")" || ok "$flags: no note"
done

# 2. Without --fn every shmap of the file is built; the executable then needs --fn.
F=$ROOT/samples/collective_matmul.spmd
"$SPMDC" build "$F" --target cpu -o "$W/cm" 2>"$W/err" || { fail "build without --fn: $(cat "$W/err")"; exit 1; }
"$W/cm" --random 3 >"$W/out" 2>"$W/err"; rc=$?
[[ $rc -eq 1 ]] && grep -qF "this program has 2 functions (\`allgather_matmul\`, \`allgather_matmul_reference\`); choose one with --fn NAME" "$W/err" &&
  ok "no default function" || fail "no default function: exit $rc, $(cat "$W/err")"
"$W/cm" --help | grep -q "^Functions (choose one with --fn):" && ok "--help says choose" || fail "--help"
for fn in allgather_matmul allgather_matmul_reference; do
  "$SPMDC" run "$F" --fn $fn --random 3 >"$W/want" || fail "spmdc run --fn $fn"
  "$W/cm" --fn $fn --random 3 >"$W/got" && cmp -s "$W/want" "$W/got" && ok "--fn $fn = spmdc run" ||
    fail "--fn $fn differs from spmdc run: $(diff "$W/want" "$W/got" | head -5)"
done
# With --fn the executable has a default, marked in --help.
"$SPMDC" build "$F" --target cpu --fn allgather_matmul_reference -o "$W/cm2" -q || fail "build --fn"
"$W/cm2" --random 3 >"$W/got" && "$SPMDC" run "$F" --fn allgather_matmul_reference --random 3 >"$W/want" &&
  cmp -s "$W/want" "$W/got" && ok "--fn default runs" || fail "--fn default"
"$W/cm2" --help | grep -q "allgather_matmul_reference(.*) on mesh (x: 4) (default)$" && ok "--help marks default" ||
  fail "--help default: $("$W/cm2" --help | tail -2)"

# 3. --version: the program, its target and the spmdc that built it (spmdc --version's first line).
want_version="cm (target cpu), built by $("$SPMDC" --version | head -1) from $F"
got=$("$W/cm" --version); rc=$?
[[ $rc -eq 0 && "$got" == "$want_version" ]] && ok "--version: $got" ||
  fail "--version: exit $rc, got '$got', want '$want_version'"
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
