#!/usr/bin/env bash
# Memory of `incident-replay author`: max RSS (GNU time -v) and wall time on a generated big log
# (default 138 MB, over what a scenario file may hold: author must stop early with an error)
# and on a 1 MB log that authors into a scenario. Usage: bench/author.sh [MB]
# Needs /usr/bin/time (Debian package "time"). The files are deleted afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cgo-env.sh
mb="${1:-138}"
if [ ! -x /usr/bin/time ]; then
  echo "bench/author.sh needs GNU time at /usr/bin/time (apt-get install time)" >&2
  exit 2
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
go build -o "$tmp/genlog" ./bench/cmd/genlog
go build -o "$tmp/incident-replay" ./cmd/incident-replay

# run LABEL LOG: author LOG, print max RSS, wall time, exit status and the first stderr line.
run() {
  local status=0
  /usr/bin/time -v -o "$tmp/time.txt" "$tmp/incident-replay" author "$2" -o "$tmp/out.yaml" \
    >/dev/null 2>"$tmp/err.txt" || status=$?
  local rss wall
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time.txt")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tmp/time.txt")
  printf '%-6s log=%s bytes  max_rss=%.1f MB  wall=%s  exit=%s\n' "$1" "$(stat -c %s "$2")" "$(echo "$rss/1024" | bc -l)" "$wall" "$status"
  echo "       $(head -c 200 "$tmp/err.txt" | head -1)"
}

"$tmp/genlog" -mb "$mb" -o "$tmp/big.log"
"$tmp/genlog" -mb 1 -o "$tmp/small.log"
run big "$tmp/big.log"
run small "$tmp/small.log"
