#!/usr/bin/env bash
# scripts/compare-outputs.sh — what the compiler prints, for every program of
# the corpus, written to one folder, so that two builds can be compared byte
# for byte (a refactoring must not change any of it):
#
#   scripts/compare-outputs.sh OLD/spmdc /tmp/old
#   scripts/compare-outputs.sh build/compiler/spmdc /tmp/new
#   diff -r /tmp/old /tmp/new
#
# For each .spmd under samples/, tests/ and stdlib/ (paths as given, so
# diagnostics name the same files): `print`, `print --types`, `print
# --emit=ir`, `print --stats`, `transpose`, `jvp`, `vjp`, `grad`, `cost`,
# `shard` and `build --emit-source`, each one's stdout, stderr and exit status.
# Run it from the repository root.
set -u
spmdc=$(realpath "$1")
out=$2
mkdir -p "$out"
jobs=${JOBS:-2}
run_one() {
  local spmdc=$1 out=$2 file=$3
  local key=${file//\//__}
  local cmd
  while IFS= read -r cmd; do
    local tag=${cmd// /_}
    tag=${tag//=/-}
    # shellcheck disable=SC2086
    timeout 60 "$spmdc" $cmd "$file" >"$out/$key.$tag.out" 2>"$out/$key.$tag.err"
    echo $? >"$out/$key.$tag.rc"
  done <<'CMDS'
print
print --types
print --emit=ir
print --stats
transpose
jvp
vjp
grad
cost
shard
CMDS
  local src="$out/$key.build.cpp"
  timeout 60 "$spmdc" build --target cpu -q --emit-source "$src" "$file" \
    >"$out/$key.build.out" 2>"$out/$key.build.err"
  echo $? >"$out/$key.build.rc"
  # The temporary source's name is random; keep the rest of the message.
  sed -i -E 's#/tmp/[^ ]*#TMP#g' "$out/$key.build.err"
}
export -f run_one
find samples tests stdlib -name '*.spmd' | sort |
  xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ "$spmdc" "$out" {}
echo "$(find "$out" -type f | wc -l) files in $out"
