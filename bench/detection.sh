#!/usr/bin/env bash
# Detection latency (ready and crash) of llmwait vs the founding incidents' loops, in-process
# at S=60 with shell tools under faketime. Usage: bench/detection.sh [flags]
#   -scenario a,b,c | all   -runs N   -speed S   -tools t1,t2   (see -h)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cgo-env.sh
exec go run ./bench/cmd/detection "$@"
