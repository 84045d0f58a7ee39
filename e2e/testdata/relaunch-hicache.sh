#!/usr/bin/env bash
# A launch script as operators write them: try a HiCache size, and when the server dies,
# relaunch with a smaller one. It knows nothing about incident-replay.
set -u
PORT="${PORT:-8000}"
for size in 300 48; do
  echo "launching with --hicache-size ${size}"
  python -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8 --port "${PORT}" \
    --trust-remote-code --enable-hierarchical-cache --hicache-size "${size}" \
    --mem-fraction-static 0.816 >"server-${size}.log" 2>&1 &
  pid=$!
  for i in $(seq 1 300); do
    if ! kill -0 "${pid}" 2>/dev/null; then
      wait "${pid}"; code=$?
      echo "server with --hicache-size ${size} died (exit ${code}); last lines:"
      tail -n 3 "server-${size}.log"
      continue 2
    fi
    if curl -fsS --max-time 30 --noproxy '*' -o /dev/null "http://127.0.0.1:${PORT}/health" 2>/dev/null; then
      echo "READY with --hicache-size ${size} after ${i} checks"
      kill "${pid}"; wait "${pid}" 2>/dev/null
      exit 0
    fi
    sleep 5
  done
  echo "gave up on --hicache-size ${size}"; kill "${pid}"; wait "${pid}" 2>/dev/null
done
exit 1
