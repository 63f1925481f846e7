#!/bin/bash
# Host scripts that run with "set -o pipefail" must not take a decision on
# the status of "CMD | grep -q": grep -q exits at the first match, CMD then
# dies of SIGPIPE if it still had output to write, and pipefail turns the
# match into a failure, depending on timing and on how much CMD printed.
# (bench/run-bench.sh reported a pair without results this way.)  Use
# "grep -q PATTERN FILE", "grep -q PATTERN <(CMD)" or "grep -q PATTERN
# <<< "$VAR"" instead.  Heredoc bodies are skipped: they are guest code,
# which runs under the guest's /bin/sh without pipefail.
#
# TAP: one test case per script.
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
files=$(grep -l -E '^set -[a-z]*o pipefail|^set -o pipefail' scripts/*.sh bench/*.sh tests/*/*.sh 2>/dev/null)
n=$(wc -w <<< "$files")
echo "1..$n"
i=0
for f in $files; do
    i=$((i + 1))
    bad=$(awk '
        tag != "" { if ($0 == tag) tag = ""; next }
        /^[[:space:]]*#/ { next }
        /\|[[:space:]]*grep[[:space:]]+-[A-Za-z]*q/ { printf "%d: %s\n", NR, $0 }
        match($0, /<<-?[[:space:]]*'"'"'?[A-Za-z_]+'"'"'?/) {
            t = substr($0, RSTART, RLENGTH); sub(/^<<-?[[:space:]]*/, "", t); gsub(/'"'"'/, "", t); tag = t
        }' "$f")
    if [ -z "$bad" ]; then
        echo "ok $i - $f: no pipeline status taken from grep -q"
    else
        echo "not ok $i - $f: pipeline status taken from grep -q under pipefail"
        sed 's/^/#   /' <<< "$bad"
    fi
done
