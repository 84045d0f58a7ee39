package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/incident-replay/incident-replay/scenarios"
)

// ShimOptions configure the launch shim: wrappers that hand `python -m sglang.launch_server`
// and `sglang serve` to fakesglang and everything else to the real interpreter.
type ShimOptions struct {
	// Self is the incident-replay binary the wrappers call back into (`shim exec`).
	Self string
	// Fakesglang is the fake server binary.
	Fakesglang string
	// Python is the real interpreter that non-SGLang invocations go to.
	Python string
	// Scenario is the catalogue name or file whose host and model the launches run on.
	Scenario string
	// Speed is the fake server's time compression.
	Speed float64
}

// WriteShim writes python, python3 and sglang wrappers into dir (created if needed). Put dir
// first on PATH and run a launch script unmodified.
func WriteShim(dir string, o ShimOptions) error {
	for name, v := range map[string]string{"incident-replay": o.Self, "fakesglang": o.Fakesglang, "python": o.Python} {
		if !filepath.IsAbs(v) {
			return fmt.Errorf("shim: the %s path %q must be absolute", name, v)
		}
	}
	if o.Scenario == "" {
		return fmt.Errorf("shim: name the scenario whose host the launches run on (--scenario)")
	}
	if o.Speed <= 0 {
		o.Speed = 1
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hand := fmt.Sprintf("exec %s shim exec --scenario %s --speed %s --fakesglang %s --cache %s --",
		shq(o.Self), shq(o.Scenario), strconv.FormatFloat(o.Speed, 'g', -1, 64), shq(o.Fakesglang), shq(filepath.Join(dir, ".scenarios")))
	py := `#!/bin/sh
# incident-replay launch shim: SGLang launches go to fakesglang, the rest to the real Python.
if [ "$1" = "-m" ] && [ "$2" = "sglang.launch_server" ]; then
  shift 2
  ` + hand + ` "$@"
fi
exec ` + shq(o.Python) + ` "$@"
`
	sg := `#!/bin/sh
# incident-replay launch shim: ` + "`sglang serve`" + ` goes to fakesglang.
if [ "$1" = "serve" ]; then
  shift
  ` + hand + ` "$@"
fi
echo "sglang (incident-replay shim): only 'sglang serve ...' is replayed; got: sglang $*" >&2
exit 2
`
	for name, body := range map[string]string{"python": py, "python3": py, "sglang": sg} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ShimScenario is the scenario one shimmed launch runs: base with its launch flags replaced
// by the launch's own when base is modelled (so the flags decide what the host pays, e.g.
// --hicache-size 300 x 8 ranks on 449 GB), unchanged when it is a recorded log (inlined, so
// the cached copy needs no directory). It returns the scenario as YAML, compiled once so a
// bad flag fails here with the scenario's name.
func ShimScenario(base *scenarios.Scenario, flags []string) ([]byte, error) {
	sc, err := base.SelfContained()
	if err != nil {
		return nil, fmt.Errorf("shim: %w", err)
	}
	s := *sc
	if s.Timeline.Modelled != nil {
		s.Launch.Flags = strings.Join(flags, " ")
	}
	if _, err := scenarios.Compile(&s, 1); err != nil {
		return nil, fmt.Errorf("shim: %s with flags %q: %w", base.Name, strings.Join(flags, " "), err)
	}
	b, err := yaml.Marshal(&s)
	if err != nil {
		return nil, fmt.Errorf("shim: %w", err)
	}
	return b, nil
}

// CacheScenario writes scenario YAML under dir, named by its content, and returns the path.
func CacheScenario(dir string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	path := filepath.Join(dir, hex.EncodeToString(sum[:8])+".yaml")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
