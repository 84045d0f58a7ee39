package scenarios

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultRedactRules(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"client ip keeps port", `INFO:     10.20.30.40:51000 - "GET /health HTTP/1.1" 200 OK`, `INFO:     10.255.0.1:51000 - "GET /health HTTP/1.1" 200 OK`},
		{"loopback kept", `INFO:     127.0.0.1:40118 - "GET /model_info HTTP/1.1" 200 OK`, `INFO:     127.0.0.1:40118 - "GET /model_info HTTP/1.1" 200 OK`},
		{"any-address kept", `'host': '0.0.0.0'`, `'host': '0.0.0.0'`},
		{"versions untouched", `sglang==0.5.9 torch 2.5.1 nccl==2.21.5`, `sglang==0.5.9 torch 2.5.1 nccl==2.21.5`},
		{"ipv6", `INFO:     [2001:db8::7]:5000 - "GET /health HTTP/1.1" 200 OK`, `INFO:     [fd00::1]:5000 - "GET /health HTTP/1.1" 200 OK`},
		{"ipv6 loopback kept, c++ scopes untouched", `::1 c10::Error at::Tensor`, `::1 c10::Error at::Tensor`},
		{"times untouched", `[2026-02-24 11:18:00 TP0] 11:18:00`, `[2026-02-24 11:18:00 TP0] 11:18:00`},
		{"home dir", `File "/home/alice/venv/lib/x.py", line 3`, `File "/redacted/dir1/x.py", line 3`},
		{"bare home", `cd /home/alice`, `cd /home/user1`},
		{"model path keeps its name", `model_path='/data/models/Kimi-K2.5'`, `model_path='/redacted/dir1/Kimi-K2.5'`},
		{"code paths kept", `File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py"`, `File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py"`},
		{"nested data dir not a root", `/usr/data/x/y`, `/usr/data/x/y`},
		{"prompt", `alice@gpu-box-3:~$ python3 -m sglang.launch_server`, `user@host1:~$ python3 -m sglang.launch_server`},
		{"nccl host", `node-7:4101:4301 [1] NCCL WARN NET/Socket`, `host1:4101:4301 [1] NCCL WARN NET/Socket`},
		{"url host", `http://inference.acme.example:8000/v1 https://github.com/sgl-project/sglang/issues`, `http://host1:8000/v1 https://github.com/sgl-project/sglang/issues`},
		{"internal fqdn", `connecting to gpu-17.cluster.internal`, `connecting to host1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRedactor(DefaultRedactRules())
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Line(tc.in); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Pseudonyms are stable within a log and numbered by first appearance, so two runs agree.
func TestRedactorStablePseudonyms(t *testing.T) {
	in := []string{"a 10.1.1.1 b 10.2.2.2", "c 10.1.1.1", "d 10.3.3.3 10.2.2.2"}
	want := []string{"a 10.255.0.1 b 10.255.0.2", "c 10.255.0.1", "d 10.255.0.3 10.255.0.2"}
	for run := 0; run < 2; run++ {
		r, err := NewRedactor(DefaultRedactRules())
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range in {
			if got := r.Line(l); got != want[i] {
				t.Errorf("run %d line %d: %q, want %q", run, i, got, want[i])
			}
		}
		for _, c := range r.Counts() {
			if c.Rule == "ipv4" && (c.Replaced != 5 || c.Distinct != 3) {
				t.Errorf("ipv4 count %+v, want 5 replaced, 3 distinct", c)
			}
		}
	}
}

func TestParseRedactRules(t *testing.T) {
	cases := []struct {
		name, file string
		want       string // "" means valid
	}{
		{"valid", "- name: node\n  regex: 'gpu-node-(?P<key>\\d+)'\n  replace: 'node{n}'\n- name: ipv4\n  disable: true\n", ""},
		{"not a list", "name: x\n", "1:5: redaction rules must be a list"},
		{"unknown field", "- name: x\n  regex: a\n  replace: b\n  replcae: c\n", `unknown field "replcae"`},
		{"bad regex", "- name: x\n  regex: '('\n  replace: b\n", "2:3: x: bad regex"},
		{"empty regex", "- name: x\n  replace: b\n", "regex is empty"},
		{"matches empty", "- name: x\n  regex: 'a*'\n  replace: b\n", "matches the empty string"},
		{"bad name", "- name: My Rule\n  regex: a\n  replace: b\n", `name "My Rule"`},
		{"duplicate", "- {name: x, regex: a, replace: b}\n- {name: x, regex: c, replace: d}\n", `rule "x" is defined twice (first at line 1)`},
		{"item not a mapping", "- just-a-string\n", "a rule must be a mapping"},
		{"syntax", "- name: [x\n", "rules.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := ParseRedactRules("rules.yaml", []byte(tc.file))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(rules) != 2 || rules[0].Name != "node" || !rules[1].Disable {
					t.Fatalf("rules = %+v", rules)
				}
				return
			}
			var le *LoadError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "rules.yaml") {
				t.Fatalf("err = %v, want a LoadError containing %q", err, tc.want)
			}
		})
	}
}

func TestMergeRedactRules(t *testing.T) {
	extra := []RedactRule{
		{Name: "ipv4", Regex: `\b10\.\d+\.\d+\.\d+\b`, Replace: "ip{n}"}, // override in place
		{Name: "url-host", Disable: true},                                // switch off
		{Name: "node", Regex: `gpu-node-\d+`, Replace: "node{n}"},        // append
		{Name: "never", Disable: true},                                   // disabling an unknown rule adds nothing
	}
	merged := MergeRedactRules(DefaultRedactRules(), extra)
	r, err := NewRedactor(merged)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range r.Counts() {
		names = append(names, c.Rule)
	}
	if got := strings.Join(names, ","); got != "home-dir,private-path,ipv4,ipv6,user-at-host,nccl-host,internal-fqdn,node" {
		t.Errorf("active rules %s", got)
	}
	if got := r.Line("gpu-node-4 saw 10.9.9.9 and 192.168.1.5 via http://gpu-node-4:80"); got != "node1 saw ip1 and 192.168.1.5 via http://node1:80" {
		t.Errorf("got %q", got)
	}
}

func TestNewRedactorRejects(t *testing.T) {
	_, err := NewRedactor([]RedactRule{{Name: "a", Regex: "x", Replace: "y"}, {Name: "a", Regex: "z", Replace: "y"}, {Name: "b", Regex: "(", Replace: ""}})
	if err == nil || !strings.Contains(err.Error(), `rule 2: duplicate name "a"`) || !strings.Contains(err.Error(), "rule 3: b: bad regex") {
		t.Fatalf("err = %v", err)
	}
}
