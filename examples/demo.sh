#!/usr/bin/env bash
# `make demo`: record a real program and show what wholetrace answers about it today.
set -euo pipefail
BIN=$1
OUT=$2
mkdir -p "$OUT"
WT="$BIN/wholetrace"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$BIN/python" examples/textdiff.py

# 1. exact line and branch counts with the fewest counters (Ball-Larus count mode)
step "$WT" profile --include difflib --limit 2 examples/textdiff.py
step "$WT" profile --include difflib --format lcov -o "$OUT/textdiff.lcov" examples/textdiff.py
echo "(lcov written to $OUT/textdiff.lcov: exact DA/BRDA counts for genhtml or editor gutters)"

# 2. the whole block trace, in every thread and task
step "$WT" record --include difflib -o "$OUT/textdiff.wt" examples/textdiff.py
step "$WT" info "$OUT/textdiff.wt"
printf '\n\033[1m$ %s\033[0m\n' "$WT trace $OUT/textdiff.wt --limit 12"
"$WT" trace "$OUT/textdiff.wt" --limit 12

# 3. the same trace from far fewer events: witnesses, regenerated on reading
step "$WT" record --mode witness --include difflib -o "$OUT/textdiff-witness.wt" examples/textdiff.py
"$WT" trace "$OUT/textdiff.wt" > "$OUT/blocks.fbe"
"$WT" trace "$OUT/textdiff-witness.wt" > "$OUT/witness.fbe"
if cmp -s "$OUT/blocks.fbe" "$OUT/witness.fbe"; then
  echo "(the witness recording regenerates exactly the same $(wc -l < "$OUT/blocks.fbe") trace lines)"
else
  echo "(the witness recording regenerates the same activations; implicit calls may sit elsewhere)"
fi

# 3b. acyclic paths (Ball-Larus ids), compressed online into a whole program path, decoded the same way
step "$WT" record --mode path --wpp --include difflib -o "$OUT/textdiff-path.wt" examples/textdiff.py
"$WT" trace "$OUT/textdiff-path.wt" > "$OUT/path.fbe"
if cmp -s "$OUT/blocks.fbe" "$OUT/path.fbe"; then
  echo "(the path recording decodes to exactly the same $(wc -l < "$OUT/blocks.fbe") trace lines)"
else
  echo "(the path recording decodes to the same activations; implicit calls may sit elsewhere)"
fi

# the commands are thin layers over one object: a Trace, decoded by one kernel
step "$BIN/python" -c "from wholetrace.trace.session import Trace; from wholetrace.profile import profiles
with Trace.open('$OUT/textdiff-witness.wt') as t:
    print([(p.qualname, p.calls) for p in sorted(profiles(t), key=lambda p: -p.weight)[:3]])"

# 4. a damaged copy (cut short): --salvage reads what is intact and says what was lost
head -c $(( $(wc -c < "$OUT/textdiff.wt") / 2 )) "$OUT/textdiff.wt" > "$OUT/textdiff-cut.wt"
step "$WT" info --salvage "$OUT/textdiff-cut.wt"

# 5. the control-flow graph behind it all, and its Ball-Larus acyclic path numbering
step "$WT" cfg examples/textdiff.py:revise --paths 6

# 6. path matching on the compressed trace: did revise delete lines on two iterations in a row?
step "$WT" compress "$OUT/textdiff.wt"
step "$WT" match "$OUT/textdiff.wt" revise 8 5 6 7 8
step "$WT" match "$OUT/textdiff.wt" revise --lines 24 20 21 22 24 --all --limit 3

# 7. the whole program path: each stream compressed to a SEQUITUR grammar while the program runs
step "$WT" record --wpp --include difflib -o "$OUT/textdiff-wpp.wt" examples/textdiff.py
step "$WT" wpp "$OUT/textdiff-wpp.wt"

# 8. what the WPP shows that a profile cannot: the costliest repeated interprocedural sequences
step "$WT" hot "$OUT/textdiff-wpp.wt" --min-length 30 --max-length 300 --limit 3
# the Ball-Larus path profile of the path recording of 3b, counted on its WPP without expanding it
step "$WT" paths "$OUT/textdiff-path.wt" --function find_longest_match --limit 5

# 9. child processes: a process pool's workers record into the same recording
step "$WT" record -o "$OUT/pool.wt" examples/pool.py
"$WT" info "$OUT/pool.wt" | grep -A4 '^processes'
step "$WT" counts --limit 1 "$OUT/pool.wt"

# 10. values and why: record every value (full mode), ask what a line set and why the program printed what it did
#    (the first query compiles the WET kernels once per machine, numba caches them)
step "$WT" record --mode full -o "$OUT/textdiff-full.wt" examples/textdiff.py
step "$WT" values "$OUT/textdiff-full.wt" examples/textdiff.py:36
step "$WT" slice "$OUT/textdiff-full.wt" --output
