package preload

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed csrc/*.c csrc/*.h
var csrc embed.FS

var (
	cflags = []string{"-shared", "-fPIC", "-O2", "-Wall"}
	ldlibs = []string{"-ldl", "-lpthread"}
)

// Library returns the path of the LD_PRELOAD library, building the embedded C sources
// with the system C compiler ($CC, else cc) into
// os.UserCacheDir()/incident-replay/vtime-<hash>.so when that file is missing. The hash
// covers the sources, the flags and the compiler's name; concurrent builds are safe (each
// renames its own complete file into place).
func Library(ctx context.Context) (string, error) {
	cc := compiler()
	h := sha256.New()
	fmt.Fprintln(h, strings.Join(cc, " "), cflags, ldlibs)
	names, err := fs.Glob(csrc, "csrc/*")
	if err != nil {
		return "", err
	}
	for _, n := range names {
		b, _ := csrc.ReadFile(n)
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("vtime/preload: no cache directory for the LD_PRELOAD library: %w (set HOME or XDG_CACHE_HOME)", err)
	}
	dir := filepath.Join(cache, "incident-replay")
	out := filepath.Join(dir, "vtime-"+hex.EncodeToString(h.Sum(nil))[:16]+".so")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("vtime/preload: create the library cache: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "vtime-build-*")
	if err != nil {
		return "", fmt.Errorf("vtime/preload: create a build directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	so := filepath.Join(tmp, "vtime.so")
	if msg, err := build(ctx, cc, tmp, so); err != nil {
		return "", err
	} else if len(msg) > 0 {
		// Warnings do not stop the build; they are worth a report.
		fmt.Fprintf(os.Stderr, "vtime/preload: %s warns:\n%s", cc[0], msg)
	}
	if err := os.Rename(so, out); err != nil {
		return "", fmt.Errorf("vtime/preload: install the library: %w", err)
	}
	return out, nil
}

func compiler() []string {
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		return cc
	}
	return []string{"cc"}
}

// build writes the sources into dir and compiles them to so; it returns the compiler's
// output.
func build(ctx context.Context, cc []string, dir, so string) ([]byte, error) {
	if _, err := exec.LookPath(cc[0]); err != nil {
		return nil, fmt.Errorf("vtime/preload: no C compiler to build the LD_PRELOAD library: %s is not on PATH "+
			"(install Debian's gcc package, apt-get install gcc, or set CC)", cc[0])
	}
	names, _ := fs.Glob(csrc, "csrc/*")
	args := append(append([]string{}, cc[1:]...), cflags...)
	args = append(args, "-o", so)
	for _, n := range names {
		b, _ := csrc.ReadFile(n)
		p := filepath.Join(dir, filepath.Base(n))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, fmt.Errorf("vtime/preload: write %s: %w", p, err)
		}
		if strings.HasSuffix(n, ".c") {
			args = append(args, p)
		}
	}
	args = append(args, ldlibs...)
	cmd := exec.CommandContext(ctx, cc[0], args...)
	cmd.Dir = dir
	msg, err := cmd.CombinedOutput()
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return msg, fmt.Errorf("vtime/preload: building the library: %w", ctx.Err())
		}
		return msg, fmt.Errorf("vtime/preload: %s failed to build the LD_PRELOAD library: %v\n%s", cc[0], err, msg)
	}
	return msg, nil
}
