#!/usr/bin/env bash
# Wall time and CPU of `make demo`'s score command, side by side with a base revision (default:
# the last commit before event-driven virtual time, which scored at 60x on faketime), and of the
# founding cold start (hicache-48-cold-start x founding-loop-1: 120 probes over 10 minutes)
# against what the loop's processes alone cost: the same loop text run natively with its
# sleeps taken out, against a port nothing listens on (the scenario binds its port at 10m32s,
# so every probe of the replay is refused too). Figures are printed as ratios.
#
#   bash bench/speed.sh [--no-matrix] [BASE]     (--no-matrix: the founding cold start alone)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cgo-env.sh

matrix=1
if [[ "${1:-}" == --no-matrix ]]; then
	matrix=0
	shift
fi

base=${1:-$(git log --format=%H --diff-filter=A -- vtime/clock.go | tail -1)^}
base=$(git rev-parse --verify -q "$base^{commit}") || {
	echo "speed.sh: no revision ${1:-before vtime/clock.go} here (a shallow clone? git fetch --unshallow)" >&2
	exit 2
}
command -v faketime >/dev/null || {
	echo "speed.sh: the base scores at 60x under faketime: apt-get install faketime" >&2
	exit 2
}
make -s build >/dev/null
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/base" "$base"
(cd "$work/base" && go build -o bin/incident-replay ./cmd/incident-replay &&
	CGO_ENABLED=0 go build -o bin/fakesglang ./cmd/fakesglang && go build -o bin/llmwait ./cmd/llmwait)

# measure KEY LABEL CMD...: prints LABEL's wall time and CPU (user+sys of the command's
# processes) and keeps them in wall[KEY] and cpu[KEY]. Exit 3 (a must-pass tool missed) is a scorecard too.
declare -A wall cpu
measure() {
	local key=$1 name=$2 t w u s rc
	shift 2
	t=$({
		TIMEFORMAT='%R %U %S'
		time { "$@" >"$work/out" 2>&1 && echo 0 >"$work/rc" || echo $? >"$work/rc"; }
	} 2>&1 | tail -1)
	rc=$(<"$work/rc")
	if ((rc != 0 && rc != 3)); then
		echo "speed.sh: $name failed with $rc:" >&2
		tail -5 "$work/out" >&2
		exit 1
	fi
	read -r w u s <<<"$t"
	wall[$key]=$w
	cpu[$key]=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
	printf '  %-34s %8.2f s wall %8.2f s CPU\n' "$name" "$w" "${cpu[$key]}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# The base's core tools: the current default set adds popen-launch, llmwait-launch and
# tc-http-withwaitstrategy, so the matrices are also compared on the base's 264 cells.
core=compose-sglang,curl-strict,founding-loop-1,founding-loop-2,k8s-kserve,llmwait,sglang-popen,tc-http
founding=(--scenario hicache-48-cold-start --tool-name founding-loop-1)
loop=$(go run ./bench/cmd/foundingloop)

echo "base $(git log --format='%h %s' -1 "$base" | cut -c1-70)"
echo "head $(git log --format='%h %s' -1 HEAD | cut -c1-70)"
echo "$(nproc) cores"
if ((matrix)); then
	measure base_demo "base demo (60x, 264 cells)" "$work/base/bin/incident-replay" score --quiet
	measure head_demo_264 "head demo on the base's 264 cells" ./bin/incident-replay score --speed 0 --quiet --tool-name "$core"
	measure head_demo "head demo (363 cells)" ./bin/incident-replay score --speed 0 --quiet
fi
measure base_founding "base founding cold start (60x)" "$work/base/bin/incident-replay" score --quiet "${founding[@]}"
measure head_founding "head founding cold start" ./bin/incident-replay score --speed 0 --quiet "${founding[@]}"
measure floor "the loop's processes alone" bash -c "$loop"

echo "ratios (head / base; wall, CPU):"
((matrix)) && echo "  demo, same cells:     $(ratio "${wall[head_demo_264]}" "${wall[base_demo]}") $(ratio "${cpu[head_demo_264]}" "${cpu[base_demo]}")"
echo "  founding cold start:  $(ratio "${wall[head_founding]}" "${wall[base_founding]}") $(ratio "${cpu[head_founding]}" "${cpu[base_founding]}")"
echo "founding cold start / the loop's processes alone (wall, CPU): $(ratio "${wall[head_founding]}" "${wall[floor]}") $(ratio "${cpu[head_founding]}" "${cpu[floor]}")"
