package sglang

import (
	"fmt"
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
