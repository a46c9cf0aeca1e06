package teamspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// wrongType says, per field of v1alpha1.TeamSpaceSpec (by JSON name), what
// its value must be, for a spec whose field does not decode into the type;
// "<field>.*" for the values of a map. TestWrongTypeCoversTheAPI holds it
// to the type's fields.
var wrongType = map[string]string{
	"pods":             fmt.Sprintf("must be an integer from %d to %d", MinPods, MaxPods),
	"cpu":              `must be a quantity string such as "500m" or "2"`,
	"memory":           `must be a quantity string such as "512Mi" or "2Gi"`,
	"ephemeralStorage": `must be a quantity string such as "4Gi"`,
	"objects":          `must be an object of counts such as {"secrets": 20}`,
	"objects.*":        fmt.Sprintf("must be an integer from 0 to %d", MaxObjectCount),
	"defaults":         "must be an object with cpu and memory quantity strings",
	"owners":           "must be a list of {kind, name, namespace}",
	"podSecurity":      "must be one of " + strings.Join(podSecurityNames(), ", "),
	"networkIsolation": "must be true or false",
	"allow":            "must be an object of lists of names (storageClasses, priorityClasses, runtimeClasses, ingressClasses, gateways)",
	"nodeSelector":     `must be an object of label values such as {"pool": "team-a"}`,
	"nodeSelector.*":   "must be a label value (a string)",
	"namespaces":       "must be a list of {name, pods, cpu, memory, ephemeralStorage, objects}",
}

func podSecurityNames() []string {
	var names []string
	for _, l := range v1alpha1.PodSecurityLevels {
		names = append(names, string(l))
	}
	return names
}

// decodeSpec decodes each field of a spec object into its field of
// v1alpha1.TeamSpaceSpec on its own, so that every field of the wrong type
// (a spec that bypassed validation) is named, each map value by its key.
// Unknown fields are ignored, as the API server prunes them. bad holds the
// fields that did not decode (a map's good entries are kept).
func decodeSpec(fields map[string]json.RawMessage) (api v1alpha1.TeamSpaceSpec, bad map[string]bool, problems []string) {
	bad = map[string]bool{}
	v := reflect.ValueOf(&api).Elem()
	for i := range v.NumField() {
		name := jsonName(v.Type().Field(i))
		if !present(fields, name) {
			continue
		}
		raw, f := fields[name], v.Field(i)
		if f.Kind() != reflect.Map {
			if decodeValue(raw, f) != nil {
				bad[name] = true
				problems = append(problems, fmt.Sprintf("spec.%s %s, got %s", name, wrongType[name], bytes.TrimSpace(raw)))
			}
			continue
		}
		var entries map[string]json.RawMessage
		if json.Unmarshal(raw, &entries) != nil {
			bad[name] = true
			problems = append(problems, fmt.Sprintf("spec.%s %s, got %s", name, wrongType[name], bytes.TrimSpace(raw)))
			continue
		}
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		f.Set(reflect.MakeMapWithSize(f.Type(), len(entries)))
		for _, k := range keys {
			e := reflect.New(f.Type().Elem()).Elem()
			if decodeValue(entries[k], e) != nil {
				problems = append(problems, fmt.Sprintf("spec.%s.%s %s, got %s", name, k, wrongType[name+".*"], bytes.TrimSpace(entries[k])))
				continue
			}
			f.SetMapIndex(reflect.ValueOf(k).Convert(f.Type().Key()), e)
		}
	}
	return api, bad, problems
}

// decodeValue decodes raw into v. An integer takes any JSON number with an
// integral value (4.0), as the API server's integer type does; one beyond
// the Go type's range becomes the range's end, so that the bounds check
// refuses it by its own message.
func decodeValue(raw json.RawMessage, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		raw = bytes.TrimSpace(raw)
		var f float64
		if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) {
			return fmt.Errorf("not an integer")
		}
		maxInt := int64(math.MaxInt64 >> (64 - v.Type().Bits()))
		switch {
		case f >= float64(maxInt):
			v.SetInt(maxInt)
		case f <= float64(-maxInt-1):
			v.SetInt(-maxInt - 1)
		default:
			v.SetInt(int64(f))
		}
		return nil
	}
	return json.Unmarshal(raw, v.Addr().Interface())
}

// jsonName is a struct field's name in JSON.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// present reports whether a spec field is set: there and not null (the
// API server drops a null field; the hook reads it as unset).
func present(fields map[string]json.RawMessage, name string) bool {
	raw, ok := fields[name]
	return ok && len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}
