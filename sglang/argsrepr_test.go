package sglang

import (
	"fmt"
	"strings"
	"testing"
)

func TestSplitRepr(t *testing.T) {
	cases := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{`ServerArgs(model_path='a/b', tp_size=8, cuda_graph_bs=[1, 2, 4], api_key=None)`, `[{model_path 'a/b'} {tp_size 8} {cuda_graph_bs [1, 2, 4]} {api_key None}]`, false},
		{`{'model_path': 'a,b', 'json': '{"x": 1}', 'tp_size': 2}`, `[{model_path 'a,b'} {json '{"x": 1}'} {tp_size 2}]`, false},
		{`ServerArgs(model_path='it\'s', x=Foo(a=1, b=2))`, `[{model_path 'it\'s'} {x Foo(a=1, b=2)}]`, false},
		{`ServerArgs(model_path='a', tp_si`, `[{model_path 'a'}]`, true},
		{`Namespace(x=1)`, `[]`, true},
	}
	for _, tc := range cases {
		got, err := SplitRepr(tc.in)
		if fmt.Sprint(got) != tc.want && !(len(got) == 0 && tc.want == "[]") || (err != nil) != tc.wantErr {
			t.Errorf("SplitRepr(%q) = %v, %v; want %s (err %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// The api_key a tool needs is read from either repr form, and not from a longer key that
// ends in api_key.
func TestReprValue(t *testing.T) {
	a := DefaultServerArgs()
	a.ModelPath, a.APIKey = "m", "sk-1"
	for _, dict := range []bool{false, true} {
		v, ok := ReprValue(a.Repr(dict), "api_key")
		if k, _ := PyString(v); !ok || k != "sk-1" {
			t.Errorf("dict=%v: api_key %q %v", dict, v, ok)
		}
	}
	if v, ok := ReprValue(`ServerArgs(admin_api_key='x', tp_size=1)`, "api_key"); ok {
		t.Errorf("admin_api_key read as api_key: %q", v)
	}
	if v, ok := ReprValue(`ServerArgs(model_path='m', api_key='k', tp_si`, "api_key"); !ok || v != "'k'" {
		t.Errorf("cut-short repr: %q %v", v, ok)
	}
}

func TestReprFlags(t *testing.T) {
	a := DefaultServerArgs()
	a.ModelPath = "moonshotai/Kimi-K2.5"
	a.TPSize = 8
	a.EnableHierarchicalCache = true
	a.HiCacheSize = 48
	a.CUDAGraphBS = []int{1, 2, 4}
	mfs := 0.85
	a.MemFractionStatic = &mfs
	for _, dict := range []bool{false, true} {
		argv, dropped, err := ReprFlags(a.Repr(dict))
		if err != nil || len(dropped) > 0 {
			t.Fatalf("dict=%v: %v %v", dict, err, dropped)
		}
		got, err := ParseArgs(argv)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got.Argv(), " ") != strings.Join(a.Argv(), " ") {
			t.Errorf("dict=%v: %v, want %v", dict, got.Argv(), a.Argv())
		}
	}
	// Unmodelled fields and values that flags cannot carry are reported, never silently lost.
	_, dropped, err := ReprFlags(`ServerArgs(model_path='m', served_model_name='my model', some_new_field=3, dtype='int3')`)
	if err != nil {
		t.Fatal(err)
	}
	if d := strings.Join(dropped, "\n"); !strings.Contains(d, "does not model") || !strings.Contains(d, "--served-model-name") || !strings.Contains(d, "--dtype") {
		t.Errorf("dropped = %v", dropped)
	}
}
