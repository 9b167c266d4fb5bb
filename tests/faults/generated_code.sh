#!/usr/bin/env bash
# tests/faults/generated_code.sh — awkward text in the C++ that `spmdc build` emits.
#
# A program whose comments end in a backslash (which the C preprocessor would
# splice with the next line) and hold quotes and odd bytes, in a file whose
# path holds a newline, quotes, a backslash, `$(...)` and a leading `-`, must
# build and give the same results as `spmdc run`; `--show-command` must print
# a line a shell reads back as the same words (and never runs `$(...)`).
# Usage: generated_code.sh SPMDC SOURCE_DIR
set -u
SPMDC=$(realpath "$1")
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails+1)); }
D="$W/dir \"q\" \\ \$(touch pwned)"$'\n'"x"
mkdir -p "$D"
P="$D/-odd \$(touch pwned) 'q'.spmd"
cat > "$P" <<'SPMD'
# A comment that ends in a backslash \
mesh M = (i: 2)  # "quotes" and 'quotes' and */ and ??/ and \
shmap f(x: f32[4] @ P(i)) -> f32[] @ P() on M {  # trailing \   
  y = x * 2.0  # C:\dir\ 
  for k in range(2) {  # a loop stays a C++ loop \
    y = y + 1.0  # inside it \
  }
  z = y + 1.0  # é ü \x00 \
  return psum(sum(z), i)  # end \\
}
SPMD
cd "$W" || exit 1
"$SPMDC" run "$P" --random 3 > expected.txt || fail "spmdc run"
"$SPMDC" build "$P" --target cpu -o "$W/-exe \$(touch pwned)" --show-command 2> show.txt \
  || { fail "spmdc build"; cat show.txt; }
"$W/-exe \$(touch pwned)" --random 3 > got.txt || fail "the executable"
cmp -s expected.txt got.txt || { fail "results differ"; diff expected.txt got.txt; }
# The printed command, read back by a shell, gives the same words: the output
# path must come back whole, and nothing may be run.
# It names the executable's final path (a command that can be run again) and
# the emitted source, which is kept.
line=$(grep -v 'runtime from\|source kept in' show.txt | sed 's/^spmdc: //')
words=$(bash -c 'eval "set -- $1"; printf "%s\n" "$@"' _ "$line")
grep -qxF -- "$W/-exe \$(touch pwned)" <<< "$words" || { fail "show-command words:"; echo "$words"; }
kept=$(sed -n 's/^spmdc: source kept in //p' show.txt)
[[ -f $kept ]] && grep -qxF -- "$kept" <<< "$words" || fail "show-command: the source \`$kept\` is not kept"
[[ -n $kept ]] && rm -rf "$(dirname "$kept")"
grep -qF -- "-I" <<< "$words" || fail "show-command: no -I"
find "$W" -name pwned | grep -q . && fail "a \$(...) in a path was run"
# --cxxflags and SPMDC_CXXFLAGS reach the compiler as separate words.
SPMDC_CXXFLAGS="-DFROM_ENV='a b'" "$SPMDC" build "$P" --target cpu -o "$W/e2" --show-command \
  --cxxflags "-O1 -DX=\"1 2\"" 2> show2.txt || { fail "build with --cxxflags"; cat show2.txt; }
line=$(grep -v 'runtime from\|source kept in' show2.txt | sed 's/^spmdc: //')
kept=$(sed -n 's/^spmdc: source kept in //p' show2.txt)
[[ -n $kept ]] && rm -rf "$(dirname "$kept")"
words=$(bash -c 'eval "set -- $1"; printf "%s\n" "$@"' _ "$line")
for w in "-DFROM_ENV=a b" "-O1" "-DX=1 2"; do
  grep -qxF -- "$w" <<< "$words" || { fail "flag \`$w\` not passed as one word:"; echo "$words"; }
done
"$SPMDC" build "$P" --target cpu -o "$W/e3" --cxxflags "-DX='unbalanced" 2> err.txt
[[ $? -eq 1 ]] && grep -qF "unbalanced" err.txt || { fail "unbalanced --cxxflags"; cat err.txt; }
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
