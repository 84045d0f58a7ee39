#!/usr/bin/env bash
# Soak of fakesglang's memory: 2,000,000 requests mixed over its routes from 64 connections on
# loopback; prints RSS after the first 10,000 and at the end. Acceptance: end <= 1.5x early.
# Stops by itself (bench/cmd/soak's -max, 10 minutes by default).
# Usage: bench/soak.sh [N]     (needs Go)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cgo-env.sh
n=${1:-2000000}
dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
CGO_ENABLED=0 go build -trimpath -o "$dir/fakesglang" ./cmd/fakesglang
go build -o "$dir/soak" ./bench/cmd/soak
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# At 100000x a generation's and a generating health check's scenario latencies are microseconds.
"$dir/fakesglang" --model-path m --host 127.0.0.1 --port "$port" --speed 100000 --bind-after 0s \
  --enable-metrics >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/v1/models" && break; sleep 0.05; done
"$dir/soak" -url "http://127.0.0.1:$port" -pid "$pid" -n "$n" -c 64 -early 10000 -max 10m
