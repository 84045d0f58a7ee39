package sglang

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	one := func(v int) *int { return &v }
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name string
		argv string
		want func(a *ServerArgs)
		err  string
	}{
		{"defaults", "--model-path org/m", func(a *ServerArgs) { a.ModelPath = "org/m" }, ""},
		{"incident 1", "--model-path moonshotai/Kimi-K2.5 --tp 8 --port 8000 --host 0.0.0.0 --enable-hierarchical-cache --hicache-size 300",
			func(a *ServerArgs) {
				a.ModelPath, a.TPSize, a.Port, a.Host, a.EnableHierarchicalCache, a.HiCacheSize = "moonshotai/Kimi-K2.5", 8, 8000, "0.0.0.0", true, 300
			}, ""},
		{"equals form and aliases", "--model=m --tensor-parallel-size=4 --dp-size=2 --pp-size 2 --ep 4 --mem-fraction-static=0.88",
			func(a *ServerArgs) {
				a.ModelPath, a.TPSize, a.DPSize, a.PPSize, a.EPSize, a.MemFractionStatic = "m", 4, 2, 2, 4, f(0.88)
			}, ""},
		{"nargs list and optional ints", "--model-path m --cuda-graph-bs 1 2 4 --cuda-graph-max-bs 8 --chunked-prefill-size -1 --context-length 8192",
			func(a *ServerArgs) {
				a.ModelPath, a.CUDAGraphBS, a.CUDAGraphMaxBS, a.ChunkedPrefillSize, a.ContextLength = "m", []int{1, 2, 4}, one(8), one(-1), one(8192)
			}, ""},
		{"booleans and strings", "--model-path m --skip-server-warmup --enable-metrics --api-key sk-1 --log-level warning --watchdog-timeout 1800 --served-model-name kimi --hicache-write-policy write_back --hicache-storage-backend mooncake --hicache-ratio 2.5 --disable-cuda-graph --max-running-requests 64",
			func(a *ServerArgs) {
				a.ModelPath, a.SkipServerWarmup, a.EnableMetrics, a.APIKey, a.LogLevel, a.WatchdogTimeout = "m", true, true, "sk-1", "warning", 1800
				a.ServedModelName, a.HiCacheWritePolicy, a.HiCacheStorageBackend, a.HiCacheRatio, a.DisableCUDAGraph, a.MaxRunningRequests = "kimi", "write_back", "mooncake", 2.5, true, one(64)
			}, ""},
		{"unknown flags all reported", "--model-path m --foo --bar=1 baz", nil, "error: unrecognized arguments: --foo --bar=1 baz"},
		{"missing model", "--tp 2", nil, "error: the following arguments are required: --model-path/--model"},
		{"bad int", "--model-path m --tp two", nil, "error: argument --tp-size/--tp/--tensor-parallel-size: invalid int value: 'two'"},
		{"bad float", "--model-path m --mem-fraction-static=lots", nil, "error: argument --mem-fraction-static: invalid float value: 'lots'"},
		{"nan float", "--model-path m --hicache-ratio nan", nil, "invalid float value: 'nan'"},
		{"missing value", "--model-path m --port", nil, "error: argument --port: expected one argument"},
		{"value looks like flag", "--model-path m --port --tp 2", nil, "error: argument --port: expected one argument"},
		{"bool with value", "--model-path m --enable-metrics=yes", nil, "error: argument --enable-metrics: ignored explicit argument 'yes'"},
		{"choice", "--model-path m --hicache-write-policy sometimes", nil, "invalid choice: 'sometimes' (choose from 'write_back', 'write_through', 'write_through_selective')"},
		{"empty list", "--model-path m --cuda-graph-bs", nil, "expected at least one argument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseArgs(strings.Fields(tc.argv))
			if tc.err != "" {
				var ae *ArgsError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &ae) || ae.ExitCode() != UsageExitCode {
					t.Fatalf("err = %v, want *ArgsError containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultServerArgs()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
			back, err := ParseArgs(got.Argv())
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("Argv round trip: %v\n%+v\n%+v", err, back, got)
			}
		})
	}
}

func TestServerArgsHelpers(t *testing.T) {
	cases := []struct {
		argv        string
		ranks, node int
		served, url string
	}{
		{"--model-path m", 1, 1, "m", "http://127.0.0.1:30000"},
		{"--model-path m --tp 8 --port 8000 --host 0.0.0.0", 8, 8, "m", "http://0.0.0.0:8000"},
		{"--model-path m --tp 8 --pp-size 2 --nnodes 2 --served-model-name glm", 16, 8, "glm", "http://127.0.0.1:30000"},
		{"--model-path m --tp 4 --dp 4 --enable-dp-attention --host ::1", 4, 4, "m", "http://[::1]:30000"},
		{"--model-path m --tp 2 --dp 2", 4, 4, "m", "http://127.0.0.1:30000"},
	}
	for _, tc := range cases {
		a, err := ParseArgs(strings.Fields(tc.argv))
		if err != nil {
			t.Fatal(err)
		}
		if a.Ranks() != tc.ranks || a.RanksPerNode() != tc.node || a.ServedName() != tc.served || a.URL() != tc.url {
			t.Errorf("%s: ranks %d/%d served %q url %q", tc.argv, a.Ranks(), a.RanksPerNode(), a.ServedName(), a.URL())
		}
	}
}

func TestServerArgsRepr(t *testing.T) {
	a, _ := ParseArgs([]string{"--model-path", "org/m", "--tp", "8"})
	r := a.Repr(false)
	if !strings.HasPrefix(r, "ServerArgs(model_path='org/m', tokenizer_path=None") || !strings.Contains(r, "tp_size=8") || !strings.HasSuffix(r, ")") {
		t.Errorf("dataclass repr: %s", r)
	}
	d := a.Repr(true)
	if !strings.HasPrefix(d, "{'model_path': 'org/m'") || !strings.Contains(d, "'watchdog_timeout': 300.0") {
		t.Errorf("dict repr: %s", d)
	}
}
