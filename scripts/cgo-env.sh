# Sourced from the repository root by scripts that run go build or go run themselves: the C
# compiler settings the Makefile gives cgo, so that go-nvml's cold build does not print its
# deprecation warnings (scripts/cc-nvml.sh). Only where a C compiler exists.
if [ -z "${NVML_REAL_CC:-}" ]; then
	cgo_cc=${CC:-gcc}
	if command -v "${cgo_cc%% *}" >/dev/null 2>&1; then
		export NVML_REAL_CC=$cgo_cc CC=$PWD/scripts/cc-nvml.sh
	fi
	unset cgo_cc
fi
