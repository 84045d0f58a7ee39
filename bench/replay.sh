#!/usr/bin/env bash
# Player precision: a 10-minute startup timeline replayed at 60x (goal: ~10 s wall, every event
# within 20 ms of its due time), beside a bare runtime timer waiting for the same instants.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'BenchmarkReplayTenMinutesAt60x|BenchmarkPlayerPrecision100x|BenchmarkTimerBaseline100x' \
  -benchtime=1x ./replay/
