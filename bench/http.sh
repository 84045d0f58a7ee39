#!/usr/bin/env bash
# HTTP benchmarks of the fake SGLang server (issue 3): /health (era A) and /v1/models against a
# bare net/http handler with the same Go load generator, streaming tokens/s, RSS of
# fakesglang under load, image size, and container start -> port bound.
# Usage: bench/http.sh            (needs Go; Docker for the last two figures)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cgo-env.sh

echo "== Go benchmarks (ns/op, median of 5 interleaved rounds; ratio = bare / fake) =="
# Rounds interleave fake and bare so a noisy neighbour (shared CI cores) hits both alike.
out=/tmp/fakesglang-bench.txt
: >"$out"
go test -c -o /tmp/fakeserver.bench.test ./fakeserver
for round in 1 2 3 4 5; do
  (cd fakeserver && /tmp/fakeserver.bench.test -test.run '^$' -test.bench 'HealthEraA|Models|BareHandler|StreamTokens' \
     -test.benchtime 1s -test.benchmem) | grep '^Benchmark' | tee -a "$out"
done
awk '{sub(/-[0-9]+$/, "", $1); v[$1] = v[$1] " " $3}
     function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }; return a[int((n + 1) / 2)] }
     END {
       bare = median(v["BenchmarkBareHandler"]); h = median(v["BenchmarkHealthEraA"]); m = median(v["BenchmarkModels"])
       printf "bare net/http   %8.0f ns/op\n", bare
       printf "/health era A   %8.0f ns/op  %.2fx of bare\n", h, bare / h
       printf "/v1/models      %8.0f ns/op  %.2fx of bare\n", m, bare / m
     }' "$out"

echo "== RSS under load =="
bin=$(mktemp -d)/fakesglang
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin" ./cmd/fakesglang
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" --model-path m --port "$port" --speed 100 --bind-after 1s --profile A >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$(dirname "$bin")"' EXIT
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
go run ./bench/loadgen -url "http://127.0.0.1:$port/v1/models" -c 32 -d 5s &
lg=$!
sleep 4
echo "RSS: $(awk '/VmRSS/ {printf "%.1f MB", $2/1024}' /proc/$pid/status)"
wait $lg

if docker info >/dev/null 2>&1; then
  echo "== image size and start -> port bound =="
  tag=$(go run ./bench/image)
  docker image inspect "$tag" --format '{{.Size}}' | awk '{printf "image size: %.1f MB\n", $1/1e6}'
  cid=$(docker run -d --label org.incident-replay.project=incident-replay -p 127.0.0.1::30000 "$tag" \
        --model-path m --host 0.0.0.0 --port 30000 --bind-after 0s)
  t0=$(date +%s%N)
  hp=$(docker port "$cid" 30000/tcp | head -1 | sed 's/.*://')
  until curl -fs -o /dev/null "http://127.0.0.1:$hp/v1/models"; do sleep 0.01; done
  t1=$(date +%s%N)
  echo "container start -> port bound: $(( (t1 - t0) / 1000000 )) ms (after docker run returned)"
  docker rm -f "$cid" >/dev/null
fi
