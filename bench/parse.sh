#!/usr/bin/env bash
# Parse throughput on a generated ~500 MB SGLang log, side by side with `grep -c 'Prefill batch'`
# on the same file. Usage: bench/parse.sh [MB]   (default 500; the file is deleted afterwards)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cgo-env.sh
mb="${1:-500}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/genlog" ./bench/cmd/genlog
go build -o "$tmp/parsebench" ./bench/cmd/parsebench
log="$tmp/bench.log"
"$tmp/genlog" -mb "$mb" -o "$log"
bytes=$(stat -c %s "$log")
cat "$log" > /dev/null # warm the page cache so both tools read from memory

# The parser on one core.
parse_out=$(GOMAXPROCS=1 "$tmp/parsebench" "$log")
parse_s=$(sed -E 's/.*seconds=([0-9.]+).*/\1/' <<<"$parse_out")
parse_prefill=$(sed -E 's/.*prefill=([0-9]+).*/\1/' <<<"$parse_out")

# grep's wall and CPU (user+sys) time, from bash's time keyword.
TIMEFORMAT='%R %U %S'
{ time LC_ALL=C grep -c 'Prefill batch' "$log" > "$tmp/grep.count"; } 2> "$tmp/grep.time"
grep_count=$(cat "$tmp/grep.count")
read -r grep_s grep_u grep_sys < "$tmp/grep.time"
grep_cpu=$(echo "$grep_u + $grep_sys" | bc -l)
parse_cpu=$(sed -E 's/.*cpu_seconds=([0-9.]+).*/\1/' <<<"$parse_out")

echo "file:   $bytes bytes"
echo "parse:  $parse_out"
printf 'grep:   count=%s seconds=%.3f mb_per_s=%.1f cpu_seconds=%.3f\n' "$grep_count" "$grep_s" "$(echo "$bytes/1000000/$grep_s" | bc -l)" "$grep_cpu"
printf 'ratio:  parse/grep wall %.2fx, cpu %.2fx\n' "$(echo "$parse_s/$grep_s" | bc -l)" "$(echo "$parse_cpu/$grep_cpu" | bc -l)"
echo "load:   $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15-min load average during the run)"
if [ "$parse_prefill" != "$grep_count" ]; then
  echo "MISMATCH: parser found $parse_prefill Prefill lines, grep $grep_count" >&2
  exit 1
fi
