package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSelectToolsErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    scoreOptions
		want string
	}{
		{"built-in clash", scoreOptions{userTools: []string{"curl-strict=curl -fsS {{.URL}}/health"}},
			`tool "curl-strict" clashes with the built-in tool curl-strict`},
		{"user clash", scoreOptions{userTools: []string{"a=true", "name=a;command=false"}}, `two tools are named "a"`},
		{"empty tools file", scoreOptions{toolsFile: empty}, "has no tools; the format is:"},
		{"unknown key", scoreOptions{userTools: []string{"name=a;intervall=2s;command=true"}}, "did you mean interval?"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := selectTools(c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to mention %q", err, c.want)
			}
		})
	}
	ts, err := selectTools(scoreOptions{userTools: []string{"name=mine;budget=20m;command=curl -fsS {{.URL}}/health"}})
	if err != nil {
		t.Fatal(err)
	}
	if last := ts[len(ts)-1]; last.Name != "mine" || last.Budget.Minutes() != 20 {
		t.Fatalf("the --tool entry is not selected with its budget: %+v", last)
	}
}
