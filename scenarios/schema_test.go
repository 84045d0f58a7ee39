package scenarios

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite schema.json")

// TestSchemaUpToDate fails when schema.json no longer matches the Go types; fix it with
// `go generate ./scenarios`.
func TestSchemaUpToDate(t *testing.T) {
	got, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("schema.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatalf("%v; run go generate ./scenarios", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("scenarios/schema.json is stale; run go generate ./scenarios")
	}
}
