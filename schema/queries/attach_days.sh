#!/usr/bin/env bash
# attach_days.sh: SQL that reads several slabtap files together -- the files
# of `slabtap proxy --db 'runs-%Y%m%d.db'` (a file per day), or any others.
# Prints ATTACH statements and TEMP views over all of them, each row with
# the file it came from:
#   days_sets        the view `sets` of every file (+ file)
#   days_runs        runs (+ file)
#   days_agg_sizes, days_agg_latency, days_agg_prefixes   the write aggregates
#   days_samples     stats samples
# Run ids are per file: join on (file, run_id). SQLite attaches at most 10
# files at once (SQLITE_MAX_ATTACHED); for more, run it per range of days.
#
#   schema/queries/attach_days.sh runs-202612*.db > days.sql
#   sqlite3 -cmd '.read days.sql' :memory: \
#     "SELECT file, count(*) FROM days_sets GROUP BY file"
set -eu
[ $# -ge 1 ] || { echo "usage: $0 FILE.db..." >&2; exit 2; }
[ $# -le 10 ] || { echo "$0: at most 10 files at once (SQLite's ATTACH limit)" >&2; exit 2; }
q() { printf "'%s'" "$(printf %s "$1" | sed "s/'/''/g")"; }
i=0
for f in "$@"; do
  echo "ATTACH $(q "file:$f?mode=ro") AS d$i;"
  i=$((i + 1))
done
for v in sets runs agg_sizes agg_latency agg_prefixes samples; do
  printf 'CREATE TEMP VIEW days_%s AS\n' "$v"
  i=0
  for f in "$@"; do
    [ $i -gt 0 ] && printf 'UNION ALL\n'
    printf '  SELECT %s AS file, * FROM d%d.%s\n' "$(q "$f")" "$i" "$v"
    i=$((i + 1))
  done
  printf ';\n'
done
