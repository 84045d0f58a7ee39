#!/usr/bin/env bash
# Scores the default matrix on virtual time three ways (idle, with two busy-loop CPU hogs,
# and with each fake server in a container) and compares every cell with the idle run: the
# verdicts must be equal and the claim times within 1 s for Go tools, 5 s for shell tools
# (bench/cmd/cellcmp). A verdict must depend on the scenario, the seed and the tool only.
#
#   bash bench/determinism.sh [--no-container] [score flags, e.g. --scenario a,b]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cgo-env.sh

container=1
if [[ "${1:-}" == --no-container ]]; then
	container=0
	shift
fi
make -s build >/dev/null
go build -o bin/cellcmp ./bench/cmd/cellcmp
# DETERMINISM_OUT=DIR keeps the runs' results, scorecards and logs there.
out=${DETERMINISM_OUT:-$(mktemp -d)}
mkdir -p "$out"
hogs=()
cleanup() {
	((${#hogs[@]})) && kill "${hogs[@]}" 2>/dev/null
	[[ -n "${DETERMINISM_OUT:-}" ]] || rm -rf "$out"
}
trap cleanup EXIT

# score NAME [flags]: one run, its scorecard as "scenario<TAB>tool<TAB>cell" lines.
score() {
	local name=$1 start=$SECONDS rc=0
	shift
	./bin/incident-replay score --speed 0 --reproducible --quiet --markdown "$out/$name.md" --results "$out/$name.json" "$@" >/dev/null 2>"$out/$name.err" || rc=$?
	if ((rc != 0 && rc != 3)); then # 3: a must-pass tool missed, still a scorecard
		echo "score ($name) failed with $rc:" >&2
		tail -5 "$out/$name.err" >&2
		exit 1
	fi
	awk -F'|' '
		/^\| scenario/ { for (i = 4; i < NF; i++) { t[i] = $i; gsub(/ /, "", t[i]) }; on = 1; next }
		on && /^\|[- |]+$/ { next }
		on && /^\| / { s = $2; gsub(/ /, "", s); for (i = 4; i < NF; i++) { c = $i; gsub(/^ +| +$/, "", c); print s "\t" t[i] "\t" c } ; next }
		on { on = 0 }
	' "$out/$name.md" | sort >"$out/$name.cells"
	printf '%-10s %4d cells, %4d s of wall time\n' "$name" "$(wc -l <"$out/$name.cells")" $((SECONDS - start))
}

fails=0
compare() {
	echo "idle vs $1:"
	./bin/cellcmp "$out/idle.json" "$out/$1.json" | sed 's/^/  /' || fails=$((fails + 1))
}

score idle "$@"
for _ in 1 2; do
	(while :; do :; done) &
	hogs+=($!)
done
score hogs "$@"
kill "${hogs[@]}"
hogs=()
compare hogs
if ((container)); then
	TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 score container --container "$@"
	compare container
fi
exit $((fails > 0))
