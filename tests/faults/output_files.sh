#!/usr/bin/env bash
# tests/faults/output_files.sh — how every command writes its outputs (docs/files.md).
#
# For `spmdc grad -o`, `spmdc fmt -i`, `spmdc run --out`, `spmdc build -o` and
# the --out of a built executable: devices and FIFOs are written in place,
# symbolic links are followed, existing modes are kept, `-` and /dev/stdout
# work, a default name never replaces an input, errors name the user's path
# and the reason, and no temporary is ever left behind. Each case checks the
# exit status, a fragment of the message and the files afterwards.
# Usage: output_files.sh SPMDC SOURCE_DIR
set -u
SPMDC=$(realpath "$1"); ROOT=$(realpath "$2")
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export TMPDIR=$W/tmp; mkdir "$TMPDIR"
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }
ok() { echo "ok   $*"; }
expect() {  # expect NAME STATUS FRAGMENT -- command...
  local name=$1 status=$2 fragment=$3; shift 4
  "$@" >"$W/out" 2>"$W/err"; local rc=$?
  if [[ $rc -ne $status ]] || ! grep -qF -- "$fragment" "$W/err"; then
    fail "$name: exit $rc (want $status), stderr:"; cat "$W/err"
  else
    ok "$name"
  fi
}
no_temporaries() {  # no_temporaries NAME: nothing named *tmp-spmdc* anywhere under $W
  if find "$W" -name '*tmp-spmdc*' | grep -q .; then
    fail "$1: temporaries left:"; find "$W" -name '*tmp-spmdc*'
  fi
  if [[ -n "$(ls -A "$TMPDIR")" ]]; then fail "$1: \$TMPDIR not empty:"; ls -A "$TMPDIR"; fi
}
S=$ROOT/samples/seed/example1.spmd
"$SPMDC" grad "$S" > "$W/grad.expected" || { echo "FAIL: cannot derive"; exit 1; }

# Standard output by name.
"$SPMDC" grad "$S" -o - > "$W/a" && cmp -s "$W/a" "$W/grad.expected" && ok dash || fail dash
"$SPMDC" grad "$S" -o /dev/stdout > "$W/a" && cmp -s "$W/a" "$W/grad.expected" \
  && ok dev-stdout || fail dev-stdout

# A FIFO is written in place (a reader gets the text; the FIFO stays a FIFO).
mkfifo "$W/fifo"
timeout 20 cat "$W/fifo" > "$W/from_fifo" & reader=$!
timeout 20 "$SPMDC" grad "$S" -o "$W/fifo"; rc=$?; wait $reader
[[ $rc -eq 0 && -p "$W/fifo" ]] && cmp -s "$W/from_fifo" "$W/grad.expected" && ok fifo || fail fifo

# A character device is written in place, never replaced (a private /dev/null
# made with mknod, so that a bug cannot harm the real one; needs root).
if mknod "$W/null" c 1 3 2>/dev/null; then
  "$SPMDC" grad "$S" -o "$W/null" && [[ -c "$W/null" ]] && ok device || fail device
  "$SPMDC" run "$S" --random 1 -q --out f1="$W/null" && [[ -c "$W/null" ]] && ok run-device \
    || fail run-device
else
  echo "skip device (mknod needs root)"
fi

# A symbolic link is followed: the target is written, the link kept; a link to
# nothing creates its target.
echo old > "$W/target"; ln -s target "$W/link"
"$SPMDC" grad "$S" -o "$W/link" && [[ -L "$W/link" ]] && cmp -s "$W/target" "$W/grad.expected" \
  && ok symlink || fail symlink
ln -s created "$W/dangling"
"$SPMDC" grad "$S" -o "$W/dangling" && [[ -L "$W/dangling" ]] \
  && cmp -s "$W/created" "$W/grad.expected" && ok dangling-symlink || fail dangling-symlink

# An existing file keeps its mode: grad -o, fmt -i, run --out.
echo old > "$W/mode.spmd"; chmod 640 "$W/mode.spmd"
"$SPMDC" grad "$S" -o "$W/mode.spmd" && [[ $(stat -c %a "$W/mode.spmd") == 640 ]] \
  && ok keep-mode || fail "keep-mode: $(stat -c %a "$W/mode.spmd")"
printf 'mesh M = (i: 2)\nshmap f(x: f32[4] @ P(i)) -> f32[4] @ P(i) on M {\n  return   x\n}\n' \
  > "$W/fmt.spmd"
chmod 604 "$W/fmt.spmd"
"$SPMDC" fmt -i "$W/fmt.spmd" && [[ $(stat -c %a "$W/fmt.spmd") == 604 ]] \
  && grep -q '^  return x$' "$W/fmt.spmd" && ok fmt-keeps-mode || fail fmt-keeps-mode
touch "$W/f1.npy"; chmod 600 "$W/f1.npy"
"$SPMDC" run "$S" --random 1 -q --out f1="$W/f1.npy" && [[ $(stat -c %a "$W/f1.npy") == 600 ]] \
  && [[ -s "$W/f1.npy" ]] && ok run-keeps-mode || fail run-keeps-mode

# Errors name the user's path and the reason; nothing changes.
expect out-is-dir 1 "cannot write \`$W\`: it is a directory" -- "$SPMDC" grad "$S" -o "$W"
expect out-no-dir 1 "directory \`$W/no\` does not exist" -- "$SPMDC" grad "$S" -o "$W/no/x.spmd"
if [[ $(id -u) -ne 0 ]]; then
  echo keep > "$W/ro"; chmod 444 "$W/ro"
  expect read-only 1 "cannot write \`$W/ro\`: Permission denied" -- "$SPMDC" grad "$S" -o "$W/ro"
  [[ $(cat "$W/ro") == keep ]] || fail "read-only: changed"
  mkdir "$W/locked"; chmod 555 "$W/locked"
  expect locked-dir 1 "cannot create files in directory" -- "$SPMDC" grad "$S" -o "$W/locked/x"
elif command -v setpriv >/dev/null; then
  # As root, check the same as the user `nobody`, for whom permissions hold.
  as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  chmod 755 "$W"; mkdir "$W/nobody"; chmod 777 "$W/nobody"
  # The checkout may sit in a directory only root can enter (a fresh clone in
  # a `mktemp -d`): `nobody` runs copies of spmdc and of the input.
  cp "$SPMDC" "$W/nobody/spmdc"; cp "$S" "$W/nobody/in.spmd"
  chmod 755 "$W/nobody/spmdc"; chmod 644 "$W/nobody/in.spmd"
  echo keep > "$W/nobody/ro"; chmod 444 "$W/nobody/ro"
  expect read-only 1 "cannot write \`$W/nobody/ro\`: Permission denied" -- \
    as_nobody "$W/nobody/spmdc" grad "$W/nobody/in.spmd" -o "$W/nobody/ro"
  [[ $(cat "$W/nobody/ro") == keep ]] || fail "read-only: changed"
  mkdir "$W/nobody/locked"; chmod 555 "$W/nobody/locked"
  expect locked-dir 1 "cannot create files in directory" -- \
    as_nobody "$W/nobody/spmdc" grad "$W/nobody/in.spmd" -o "$W/nobody/locked/x"
else
  echo "skip read-only (root may write anything)"
fi
expect same-output-twice 1 "is the same file, already an output" -- \
  "$SPMDC" run "$S" --random 1 -q --out f1="$W/twice.npy" --out f1="$W/./twice.npy"
[[ -e "$W/twice.npy" ]] && fail "same-output-twice: written"

# A default name never replaces an input: `spmdc build prog` (the source
# without .spmd) used to overwrite the source with the executable.
cp "$S" "$W/prog"; cp "$S" "$W/prog.orig"
(cd "$W" && "$SPMDC" build prog --target cpu) >"$W/out" 2>"$W/err"; rc=$?
if [[ $rc -eq 1 ]] && grep -qF "cannot write \`prog\`: it is an input file" "$W/err" \
   && cmp -s "$W/prog" "$W/prog.orig"; then ok build-default-name; else
  fail "build-default-name: exit $rc"; cat "$W/err"; fi
# ... nor does --out-dir DIR/NAME.npy replace an --in file.
mkdir "$W/od"
printf 'mesh M = (i: 2)\nshmap g(x: f32[] @ P()) -> (y: f32[] @ P()) on M {\n  return 2.0 * x\n}\n' \
  > "$W/id.spmd"
"$SPMDC" run "$W/id.spmd" --random 1 -q --out y="$W/od/y.npy" || fail "setup od"
cp "$W/od/y.npy" "$W/od/f1.orig"
expect out-dir-input 1 "it is an input file" -- "$SPMDC" run "$W/id.spmd" \
  --in x="$W/od/y.npy" -q --out-dir "$W/od"
cmp -s "$W/od/y.npy" "$W/od/f1.orig" || fail "out-dir-input: input changed"

# Built executables use the same writer.
"$SPMDC" build "$S" --target cpu -o "$W/ex1" || fail "build"
rm -f "$W/target"; echo old > "$W/target"; chmod 640 "$W/target"
"$W/ex1" --random 1 -q --out f1="$W/link" && [[ -L "$W/link" ]] \
  && [[ $(stat -c %a "$W/target") == 640 ]] && cmp -s "$W/target" "$W/f1.npy" \
  && ok exe-symlink-mode || fail exe-symlink-mode
"$SPMDC" build "$W/id.spmd" --target cpu -o "$W/id_exe" || fail "build id"
expect exe-out-dir-input 1 "it is an input file" -- "$W/id_exe" --in x="$W/od/y.npy" -q \
  --out-dir "$W/od"
cmp -s "$W/od/y.npy" "$W/od/f1.orig" || fail "exe-out-dir-input: input changed"
"$W/ex1" --random 1 -q --out f1=- > "$W/a" && cmp -s "$W/a" "$W/f1.npy" && ok exe-dash || fail exe-dash
expect exe-out-is-dir 1 "cannot write output \`f1\` to \`$W\`: it is a directory" -- \
  "$W/ex1" --random 1 -q --out f1="$W"
# `spmdc build -o /dev/stdout` and to a path that looks like an option. The
# executable on stdout is compared by what it does: under -fsanitize=address
# two builds of one program differ in bytes (the sanitizer records the
# temporary source file's name).
"$SPMDC" build "$S" --target cpu -o - > "$W/ex_stdout" && chmod +x "$W/ex_stdout" \
  && "$W/ex_stdout" --random 1 > "$W/ex_stdout.txt" && "$W/ex1" --random 1 > "$W/ex1.txt" \
  && cmp -s "$W/ex_stdout.txt" "$W/ex1.txt" && ok build-dash || fail build-dash
(cd "$W" && "$SPMDC" build "$S" --target cpu -o -fsyntax-only --emit-source=-E) \
  && [[ -x "$W/-fsyntax-only" && -s "$W/-E" ]] && ok dash-paths || fail dash-paths
no_temporaries "after the cases above"

# SIGTERM during `spmdc build` stops the compiler and removes every temporary.
"$SPMDC" build "$ROOT/samples/dp_loss.spmd" --target cpu -o "$W/killed" 2>/dev/null & spmdc_pid=$!
for _ in $(seq 100); do pgrep -f "$TMPDIR/spmdc-build" >/dev/null && break; sleep 0.1; done
if pgrep -f "$TMPDIR/spmdc-build" >/dev/null; then
  kill -TERM $spmdc_pid; wait $spmdc_pid; rc=$?
  sleep 0.2
  if pgrep -f "$TMPDIR/spmdc-build" >/dev/null; then fail "kill-build: the compiler still runs"; fi
  [[ $rc -eq 143 ]] || fail "kill-build: exit $rc (want 143, killed by SIGTERM)"
  [[ -e "$W/killed" ]] && fail "kill-build: executable written"
  no_temporaries kill-build
  ok kill-build
else
  wait $spmdc_pid; echo "skip kill-build (the compiler finished too fast)"
fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
