#!/usr/bin/env bash
# course.sh BUILD_DIR SOURCE_DIR — a course uses an installed spmdc, no source checkout.
#
# 1. `cmake --install` into an empty prefix, then move the tree; the teaching
#    material is there: samples, exercises (starters only: no answer anywhere
#    under share/spmdc/exercises), the grader bin/spmdc-grade, editor files.
# 2. The tutorial's first lesson (docs/tutorial.md, section 1), every `$ spmdc`
#    command of it, runs in a scratch folder holding only the installed
#    share/spmdc/ (samples/...), with the installed spmdc, and prints exactly
#    what the tutorial shows (tests/docs/check_docs.py compares).
# 3. A student: `spmdc exercises init DIR` copies the starters (and refuses to
#    overwrite them); the installed grader grades a starter (1: holes), an
#    instructor grades a filled-in one with --solutions (0), and without the
#    solutions it cannot (2, one line).
# 4. Diagnostics in the standard library name it relative to the library
#    (`std/nn.spmd:...`), not by the install prefix.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
python=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/staged" >/dev/null
mv "$tmp/staged" "$tmp/prefix"
prefix=$tmp/prefix
share=$prefix/share/spmdc
for f in samples/collectives101.spmd samples/README.md exercises/README.md \
         exercises/01-replicate/task.md exercises/01-replicate/starter.spmd \
         exercises/01-replicate/grade.json editors/README.md editors/vim/ftdetect/spmd.vim; do
  [ -f "$share/$f" ] || fail "not installed: share/spmdc/$f"
done
[ -x "$prefix/bin/spmdc-grade" ] || fail "no bin/spmdc-grade"
if find "$share/exercises" -iname '*solution*' | grep -q .; then
  fail "answers installed for students: $(find "$share/exercises" -iname '*solution*')"
fi
[ "$(find "$share/exercises" -name starter.spmd | wc -l)" -ge 12 ] || fail "fewer than 12 starters"

# 2. Lesson 1 of the tutorial, from the installed tree only.
"$python" - "$src/docs/tutorial.md" "$tmp/lesson1.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
start = text.index("\n## 1. ")
end = text.index("\n## 2. ", start)
lesson = text[start:end]
assert lesson.count("$ spmdc") >= 4, "lesson 1 has fewer sessions than expected"
open(sys.argv[2], "w").write(lesson)
PY
(cd "$tmp" && env -i PATH=/usr/bin:/bin HOME="$tmp" "$python" "$src/tests/docs/check_docs.py" \
   --spmdc "$prefix/bin/spmdc" --root "$share" "$tmp/lesson1.md") \
  || fail "the tutorial's first lesson differs when run from the installed tree"

# 3. A student's copy of the exercises, graded by the installed grader.
run() { env -i PATH="$prefix/bin:/usr/bin:/bin" HOME="$tmp" "$@"; }
run spmdc exercises init "$tmp/course" >"$tmp/init.out" || fail "exercises init: $(cat "$tmp/init.out")"
grep -q "copied 12 exercises" "$tmp/init.out" || fail "exercises init said: $(cat "$tmp/init.out")"
[ "$(ls "$tmp/course/01-replicate")" = "$(printf 'grade.json\nstarter.spmd\ntask.md')" ] \
  || fail "the student's folder holds: $(ls "$tmp/course/01-replicate")"
if run spmdc exercises init "$tmp/course" >"$tmp/init2.out" 2>&1; then
  fail "exercises init overwrote a student's files"
fi
grep -q "already exists; nothing was copied" "$tmp/init2.out" || fail "init again: $(cat "$tmp/init2.out")"
set +e
run spmdc-grade "$tmp/course/01-replicate" >"$tmp/g1.out" 2>&1
status=$?
set -e
[ "$status" = 1 ] && grep -q "NOT YET: fill in the holes marked ???" "$tmp/g1.out" \
  || fail "grading the starter: exit $status: $(cat "$tmp/g1.out")"
cp "$src/solutions/01-replicate.spmd" "$tmp/course/01-replicate/starter.spmd"
run spmdc-grade "$tmp/course/01-replicate" --solutions "$src/solutions" >"$tmp/g2.out" 2>&1 \
  || fail "grading a right answer with --solutions: $(cat "$tmp/g2.out")"
grep -q "01-replicate: PASS" "$tmp/g2.out" || fail "no PASS: $(cat "$tmp/g2.out")"
set +e
run spmdc-grade 01-replicate "$tmp/course/01-replicate/starter.spmd" >"$tmp/g3.out" 2>&1
status=$?
set -e
[ "$status" = 2 ] && [ "$(wc -l <"$tmp/g3.out")" = 1 ] && grep -q "without the reference solutions" "$tmp/g3.out" \
  || fail "grading without solutions: exit $status: $(cat "$tmp/g3.out")"

# 4. The standard library by its name in the library.
printf 'import std.nn\nmesh M = (i: 2)\n\nshmap f(x: f32[4, 3] @ P(i), y: f32[4, 2] @ P(i)) -> f32[] @ P() on M {\n  return psum(nn.mse(x, y), i)\n}\n' \
  >"$tmp/bad.spmd"
set +e
run spmdc check "$tmp/bad.spmd" 2>"$tmp/bad.err"
set -e
if grep -q "$prefix" "$tmp/bad.err"; then fail "diagnostics name the install prefix: $(cat "$tmp/bad.err")"; fi
grep -q "^std/nn.spmd:[0-9]*:[0-9]*: " "$tmp/bad.err" || fail "no std/nn.spmd location: $(cat "$tmp/bad.err")"
echo "course: ok"
