#!/bin/sh
# tests/backend/debug_print.sh SPMDC ROOT — print(...) and --check-nan in a built
# executable, run as a process: the lines in program order (per loop
# iteration, per device position for a varying value), the same text as
# `spmdc run`, no progress line in a pipe, and the NaN stop of --check-nan.
set -eu
spmdc=$1
root=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat > "$dir/order.spmd" <<'SPMD'
mesh M = (data: 2)

shmap f(x: f32[2] @ P(data)) -> f32[] @ P() on M {
  d = cast(axis_index(data), f32)
  s = 1.0
  for k in range(3) {
    print("k={}", k)
    print("d+k={}", d + cast(k, f32))
    s = s * 0.5
  }
  return s + 0.0 * psum(sum(x), data)
}
SPMD
"$spmdc" build -q --target cpu "$dir/order.spmd" -o "$dir/order"
"$dir/order" --random 1 -q > "$dir/exe.txt"
"$spmdc" run "$dir/order.spmd" --random 1 -q > "$dir/run.txt"
cat > "$dir/expected.txt" <<'TXT'
k=0
[data=0] d+k=0.
[data=1] d+k=1.
k=1
[data=0] d+k=1.
[data=1] d+k=2.
k=2
[data=0] d+k=2.
[data=1] d+k=3.
TXT
cmp -s "$dir/exe.txt" "$dir/expected.txt" || { diff "$dir/expected.txt" "$dir/exe.txt"; fail "executable's print order"; }
cmp -s "$dir/run.txt" "$dir/expected.txt" || { diff "$dir/expected.txt" "$dir/run.txt"; fail "spmdc run's print order"; }
if grep -q "$(printf '\033')" "$dir/exe.txt"; then fail "a progress line in a pipe"; fi

# --check-nan: built with it the executable stops at the log; without, it runs.
cp "$root/tests/golden/run/fail_check_nan.spmd" "$dir/nan.spmd"
"$spmdc" build -q --target cpu --check-nan "$dir/nan.spmd" -o "$dir/nan"
if "$dir/nan" --random 1 -q > /dev/null 2> "$dir/nan.err"; then fail "--check-nan did not stop"; fi
grep -q 'nan.spmd:9:13: `log` made NaN' "$dir/nan.err" || { cat "$dir/nan.err"; fail "--check-nan message"; }
grep -q 'on device 0 (i: 0)' "$dir/nan.err" || { cat "$dir/nan.err"; fail "--check-nan device"; }
"$spmdc" build -q --target cpu "$dir/nan.spmd" -o "$dir/nan_off"
"$dir/nan_off" --random 1 -q || fail "without --check-nan the run must not stop"
echo "debug_print: ok"
