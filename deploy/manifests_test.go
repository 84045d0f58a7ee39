// Package deploy_test checks the Kubernetes manifests beside it without a cluster: every
// document decodes strictly into its k8s.io/api type, the fake server's probe stanzas are the
// settings the harness's Kubernetes model tools score, and the Indexed Job's shard count
// matches its completions.
package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/scenarios"
)

// probesAnnotation names the harness model tool whose probes a Deployment carries.
const probesAnnotation = "incident-replay/probes"

// objects are the decoded documents of every manifest.
type objects struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
	jobs        []batchv1.Job
	claims      []corev1.PersistentVolumeClaim
}

// decode splits a manifest into documents and decodes each strictly (an unknown or
// misspelt field is an error) into the type its kind names.
func decode(name string, b []byte, into *objects) error {
	for i, doc := range bytes.Split(b, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("%s document %d: %w", name, i+1, err)
		}
		var err error
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 Deployment":
			var d appsv1.Deployment
			err = yaml.UnmarshalStrict(doc, &d)
			into.deployments = append(into.deployments, d)
		case "v1 Service":
			var s corev1.Service
			err = yaml.UnmarshalStrict(doc, &s)
			into.services = append(into.services, s)
		case "batch/v1 Job":
			var j batchv1.Job
			err = yaml.UnmarshalStrict(doc, &j)
			into.jobs = append(into.jobs, j)
		case "v1 PersistentVolumeClaim":
			var c corev1.PersistentVolumeClaim
			err = yaml.UnmarshalStrict(doc, &c)
			into.claims = append(into.claims, c)
		default:
			return fmt.Errorf("%s document %d: no check for %s %s; add one to this test", name, i+1, meta.APIVersion, meta.Kind)
		}
		if err != nil {
			return fmt.Errorf("%s document %d (%s): %w", name, i+1, meta.Kind, err)
		}
	}
	return nil
}

func load(t *testing.T) objects {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests here (%v)", err)
	}
	var o objects
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := decode(f, b, &o); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	bad := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replica: 1\n"
	if err := decode("bad.yaml", []byte(bad), &objects{}); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

// probe is a manifest's httpGet probe as the harness models it; port must name the
// container's http port.
func probe(t *testing.T, where string, p *corev1.Probe) *harness.Probe {
	t.Helper()
	if p == nil {
		return nil
	}
	if p.HTTPGet == nil || p.Exec != nil || p.TCPSocket != nil || p.GRPC != nil {
		t.Fatalf("%s: only httpGet probes are modelled", where)
	}
	if p.HTTPGet.Port != intstr.FromString("http") {
		t.Errorf("%s: probes port %s; name the container port (http)", where, p.HTTPGet.Port.String())
	}
	sec := func(s int32) time.Duration { return time.Duration(s) * time.Second }
	hp := harness.Probe{Path: p.HTTPGet.Path, InitialDelay: sec(p.InitialDelaySeconds), Period: sec(p.PeriodSeconds),
		Timeout: sec(p.TimeoutSeconds), SuccessThreshold: int(p.SuccessThreshold), FailureThreshold: int(p.FailureThreshold)}
	return &hp
}

func sameProbe(t *testing.T, where string, got, want *harness.Probe) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s: manifest has %v, the model tool %v", where, got != nil, want != nil)
	case got.Effective() != want.Effective():
		t.Errorf("%s: manifest %+v, the model tool scores %+v", where, got.Effective(), want.Effective())
	}
}

// Each Kubernetes model tool has a Deployment whose probes are its settings, and each
// Deployment's Service reaches it.
func TestFakeServerProbesAreTheModelTools(t *testing.T) {
	o := load(t)
	pods := harness.KubernetesPods()
	seen := map[string]bool{}
	for _, d := range o.deployments {
		tool := d.Annotations[probesAnnotation]
		pod, ok := pods[tool]
		if !ok {
			t.Errorf("deployment %s: annotation %s=%q names no Kubernetes model tool (have %v)", d.Name, probesAnnotation, tool, keys(pods))
			continue
		}
		seen[tool] = true
		cs := d.Spec.Template.Spec.Containers
		if len(cs) != 1 {
			t.Fatalf("deployment %s: %d containers, want the fake server alone", d.Name, len(cs))
		}
		c := cs[0]
		where := "deployment " + d.Name
		sameProbe(t, where+" startupProbe", probe(t, where, c.StartupProbe), pod.Startup)
		sameProbe(t, where+" readinessProbe", probe(t, where, c.ReadinessProbe), pod.Readiness)
		sameProbe(t, where+" livenessProbe", probe(t, where, c.LivenessProbe), pod.Liveness)
		checkServer(t, d, c, o.services)
	}
	for tool := range pods {
		if !seen[tool] {
			t.Errorf("model tool %s has no Deployment here (annotate one %s: %s)", tool, probesAnnotation, tool)
		}
	}
}

// checkServer holds the container to a scenario that exists and a port the probes and the
// Service use, and the Service to selecting this Deployment's pods.
func checkServer(t *testing.T, d appsv1.Deployment, c corev1.Container, services []corev1.Service) {
	t.Helper()
	if sc := flag(c.Args, "--scenario"); sc == "" {
		t.Errorf("deployment %s: no --scenario", d.Name)
	} else if _, err := scenarios.Resolve(sc); err != nil {
		t.Errorf("deployment %s: %v", d.Name, err)
	}
	if flag(c.Args, "--host") != "0.0.0.0" {
		t.Errorf("deployment %s: --host %q; the kubelet probes the pod IP, so bind 0.0.0.0", d.Name, flag(c.Args, "--host"))
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || fmt.Sprint(c.Ports[0].ContainerPort) != flag(c.Args, "--port") {
		t.Errorf("deployment %s: ports %+v, want one named http on --port %s", d.Name, c.Ports, flag(c.Args, "--port"))
	}
	labels := d.Spec.Template.Labels
	for k, v := range d.Spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("deployment %s: selector %s=%s does not select its own pods", d.Name, k, v)
		}
	}
	for _, s := range services {
		if s.Name != d.Name {
			continue
		}
		for k, v := range s.Spec.Selector {
			if labels[k] != v {
				t.Errorf("service %s: selector %s=%s misses the deployment's pods", s.Name, k, v)
			}
		}
		if len(s.Spec.Selector) == 0 || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].TargetPort != intstr.FromString("http") {
			t.Errorf("service %s: want a selector and one port targeting http", s.Name)
		}
		return
	}
	t.Errorf("deployment %s has no Service of the same name", d.Name)
}

// The Indexed Job runs shard $(JOB_COMPLETION_INDEX)/N with N its completions, each pod at
// once, each writing its own results file on the claimed volume.
func TestScoreJobShardsTheMatrix(t *testing.T) {
	o := load(t)
	if len(o.jobs) != 1 {
		t.Fatalf("%d Jobs, want the score Job", len(o.jobs))
	}
	j := o.jobs[0]
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("job %s: completionMode must be Indexed (JOB_COMPLETION_INDEX picks the shard)", j.Name)
	}
	if j.Spec.Completions == nil || j.Spec.Parallelism == nil || *j.Spec.Parallelism != *j.Spec.Completions {
		t.Fatalf("job %s: completions and parallelism must be set and equal", j.Name)
	}
	n := *j.Spec.Completions
	c := j.Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"incident-replay"}) || len(c.Args) == 0 || c.Args[0] != "score" {
		t.Fatalf("job %s: runs %v %v, want incident-replay score", j.Name, c.Command, c.Args)
	}
	idx := flag(c.Args, "--shard-index")
	if want := fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", n); idx != want {
		t.Errorf("job %s: --shard-index %q, want %q (N = completions)", j.Name, idx, want)
	}
	for k := range n {
		sh, err := harness.ParseShardIndex(strings.ReplaceAll(idx, "$(JOB_COMPLETION_INDEX)", fmt.Sprint(k)))
		if err != nil || sh.I != int(k)+1 {
			t.Errorf("job %s: index %d gives shard %v, %v", j.Name, k, sh, err)
		}
	}
	res := flag(c.Args, "--results")
	if !strings.Contains(res, "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("job %s: --results %q; each index needs a file of its own", j.Name, res)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || strings.HasPrefix(res, m.MountPath+"/")
	}
	if !mounted {
		t.Errorf("job %s: --results %q is on no mounted volume", j.Name, res)
	}
	if len(o.claims) != 1 || j.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		j.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != o.claims[0].Name {
		t.Errorf("job %s: the results volume must be the claim defined beside it", j.Name)
	}
	if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("job %s: restartPolicy must be Never (podFailurePolicy needs it)", j.Name)
	}
}

// flag is the value after name in args ("" when absent).
func flag(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
