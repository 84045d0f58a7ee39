#!/usr/bin/env bash
# Agreement of virtual time with real time on the full-length founding pairs: each pair is
# scored on event-driven virtual time (--speed 0) and at real time (--speed 1, no faketime, no
# preload), and the verdicts must match. The real-time runs go side by side, so the script
# takes as long as the slowest pair (about 11 minutes for the founding cold start).
#   bench/agreement.sh [SCENARIO:TOOL ...]
set -euo pipefail
cd "$(dirname "$0")/.."
export TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1

pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(
  hicache-48-cold-start:founding-loop-1
  hicache-48-cold-start:curl-strict
  hicache-48-cold-start:llmwait
  hicache-300-host-oom:founding-loop-2
  hicache-300-host-oom:sglang-popen
  hicache-300-host-oom:llmwait
)

make --no-print-directory build >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# cell FILE: the cell (verdict and claim time) of the one pair a scorecard Markdown file holds.
cell() { awk -F'|' '/^\| [a-z0-9]/ && $2 !~ /scenario/ { gsub(/^ +| +$/, "", $4); print $4; exit }' "$1" | tr -d '*!~'; }

i=0
for p in "${pairs[@]}"; do
  sc=${p%%:*} tool=${p#*:}
  for speed in 0 1; do
    bin/incident-replay score --quiet --speed "$speed" --scenario "$sc" --tool-name "$tool" \
      --markdown "$tmp/$i-$speed.md" >"$tmp/$i-$speed.out" 2>&1 &
  done
  i=$((i + 1))
done
start=$SECONDS
wait || true
fail=0
i=0
printf '%-28s %-16s %-20s %-20s\n' scenario tool virtual real-time
for p in "${pairs[@]}"; do
  sc=${p%%:*} tool=${p#*:}
  v=$(cell "$tmp/$i-0.md" 2>/dev/null || true) r=$(cell "$tmp/$i-1.md" 2>/dev/null || true)
  mark=""
  [ -n "$v" ] && [ "${v%% *}" = "${r%% *}" ] || { mark="  DIFFERS"; fail=1; }
  printf '%-28s %-16s %-20s %-20s%s\n' "$sc" "$tool" "${v:-?}" "${r:-?}" "$mark"
  i=$((i + 1))
done
echo "wall $((SECONDS - start)) s"
exit $fail
