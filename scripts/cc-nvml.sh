#!/bin/sh
# The C compiler `make` hands to cgo. go-nvml's generated cgo code calls every NVML function,
# the ones nvml.h marks deprecated included, so each cold build of that package printed 29
# -Wdeprecated-declarations warnings (about 150 lines). Go has no per-package CGO_CFLAGS
# (-gcflags=pkg=... reaches the Go compiler only), so this adds -Wno-deprecated-declarations
# to the compiles of that one package, which cgo runs with the package's directory as an
# include path, and runs every other compile unchanged.
real=${NVML_REAL_CC:-cc}
case $real in */cc-nvml.sh | cc-nvml.sh) real=cc ;; esac # never exec this script again
for a do
  case $a in
  */go-nvml@*/pkg/nvml) exec "$real" "$@" -Wno-deprecated-declarations ;;
  esac
done
exec "$real" "$@"
