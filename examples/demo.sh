#!/usr/bin/env bash
# `make demo`: record a real program and show what wholetrace answers about it today.
set -euo pipefail
BIN=$1
OUT=$2
mkdir -p "$OUT"
WT="$BIN/wholetrace"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$BIN/python" examples/textdiff.py
step "$WT" record --include difflib -o "$OUT/textdiff.wt" examples/textdiff.py
step "$WT" info "$OUT/textdiff.wt"
step "$WT" counts "$OUT/textdiff.wt" --limit 2
step "$WT" counts "$OUT/textdiff.wt" --format lcov -o "$OUT/textdiff.lcov"
echo "(lcov written to $OUT/textdiff.lcov: exact DA/BRDA counts for genhtml or editor gutters)"
printf '\n\033[1m$ %s\033[0m\n' "$WT trace $OUT/textdiff.wt --limit 12"
"$WT" trace "$OUT/textdiff.wt" --limit 12
step "$WT" cfg examples/textdiff.py:revise
