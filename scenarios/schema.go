package scenarios

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/gpu"
)

//go:generate go test -run TestSchemaUpToDate -update .

// JSONSchema returns the scenario format as a JSON Schema (draft 2020-12) for editors;
// scenarios/schema.json is this output, kept current by TestSchemaUpToDate.
func JSONSchema() ([]byte, error) {
	root := schemaFor(reflect.TypeFor[Scenario]())
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "incident-replay scenario"
	root["required"] = []string{"name", "summary", "sources", "profile", "host", "launch", "timeline", "expect"}
	b, err := json.MarshalIndent(root, "", "  ")
	return append(b, '\n'), err
}

var durationSchema = map[string]any{"type": "string", "pattern": `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, "description": "Go duration, e.g. 90s, 11m, 1m30s"}

func schemaFor(t reflect.Type) map[string]any {
	switch t {
	case reflect.TypeFor[Duration](), reflect.TypeFor[time.Duration]():
		return durationSchema
	case reflect.TypeFor[HostRef]():
		return map[string]any{"oneOf": []any{
			map[string]any{"type": "string", "enum": gpu.HostNames()},
			schemaFor(reflect.TypeFor[gpu.Host]()),
		}}
	case reflect.TypeFor[gpu.ComputeCapability]():
		return map[string]any{"type": "string", "pattern": `^(sm_?)?[0-9]+(\.[0-9]+)?$`}
	case reflect.TypeFor[Verdict]():
		return map[string]any{"type": "string", "enum": Verdicts()}
	case reflect.TypeFor[EndingKind]():
		return map[string]any{"type": "string", "enum": EndingKinds()}
	case reflect.TypeFor[fault.Kind]():
		return map[string]any{"type": "string", "enum": fault.Kinds()}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaFor(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return map[string]any{"type": "integer"}
	case reflect.Float64, reflect.Float32:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaFor(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaFor(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			props[name] = schemaFor(f.Type)
		}
		return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	}
	return map[string]any{}
}
