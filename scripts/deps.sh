#!/usr/bin/env bash
# What `make demo`, `make test` and CI need beyond Go, checked and, as root on Debian,
# installed with apt-get. Usage: scripts/deps.sh demo|test|ci
#   demo  the scorecard on virtual time: shell tools call curl and python3 and load the
#         virtual-time LD_PRELOAD library, compiled on first use (a C compiler, libc headers);
#         faketime only for --speed S runs on compressed wall time
#   test  demo's, plus faketime (specs at 60x), -race and go-nvml's cgo, wget (a waiter under
#         test), chromium and DejaVu fonts (the report's browser check)
#   ci    test's, plus docker.io when no Docker daemon answers (.ci/run starts it)
# It prints one line: what it installs, or that nothing is missing. Where it cannot install,
# it names the packages and the command; it fails only when what is missing would stop the run.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case $mode in
demo | test | ci) ;;
*)
  echo "usage: scripts/deps.sh demo|test|ci" >&2
  exit 2
  ;;
esac

# Go is not a Debian package of the version go.mod needs: name it, never install it.
want_go=$(awk '$1 == "go" { print $2; exit }' go.mod)
have_go=$(go env GOVERSION 2>/dev/null || true)
if [ -z "$have_go" ] || [ "$(printf '%s\n%s\n' "go$want_go" "$have_go" | sort -V | head -1)" != "go$want_go" ]; then
  echo "deps.sh $mode: Go $want_go or later is needed (found: ${have_go:-none}); install it from https://go.dev/dl" >&2
  exit 1
fi

required=() # the run fails without these
optional=() # without these some specs skip and say why (they fail under CI)
need() { # need required|optional PACKAGE: PACKAGE is missing
  if [ "$1" = required ]; then required+=("$2"); else optional+=("$2"); fi
}
command -v curl >/dev/null || need required curl
command -v python3 >/dev/null || need required python3
command -v gcc >/dev/null || command -v cc >/dev/null || need required gcc
[ -e /usr/include/stdio.h ] || need required libc6-dev
# bash's loadable sleep: one process fewer per loop iteration of a shell tool under faketime
[ -e /usr/lib/bash/sleep ] || need optional bash-builtins
if [ "$mode" = demo ]; then
  command -v faketime >/dev/null || need optional faketime
else
  command -v faketime >/dev/null || need required faketime
  command -v wget >/dev/null || need optional wget # the eficode/wait-for-style waiter's client
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need optional chromium
  [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need optional fonts-dejavu-core
fi
if [ "$mode" = ci ] && ! timeout 10 docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || need required docker.io
fi
if [ "${CI:-}" = true ] && [ ${#optional[@]} -gt 0 ]; then
  required+=("${optional[@]}")
  optional=()
fi
missing=("${required[@]}" "${optional[@]}")

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps.sh $mode: nothing to install (Go $have_go and every package $mode uses are present)"
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "deps.sh $mode: installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi
echo "deps.sh $mode: missing ${missing[*]}; install as root on Debian: apt-get install --no-install-recommends ${missing[*]}" >&2
[ ${#required[@]} -eq 0 ]
