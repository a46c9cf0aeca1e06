package teamspace

import (
	"encoding/json"
	"strings"
	"testing"

	_ "github.com/labhub/teamspace/tests/golden" // understands -update
)

func TestCanonicalQuantity(t *testing.T) {
	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "half as decimal", in: "0.5", want: "500m"},
		{name: "thousand milli is one", in: "1000m", want: "1"},
		{name: "integer", in: "2", want: "2"},
		{name: "milli", in: "250m", want: "250m"},
		{name: "decimal with integer part", in: "1.5", want: "1500m"},
		// The server keeps a spelling that is already canonical in its own
		// format, so these stay as written: the answer must match the server.
		{name: "exponent kept", in: "1e3", want: "1e3"},
		{name: "trailing zero decimals", in: "2.000", want: "2"},
		{name: "plus sign kept", in: "+3", want: "+3"},
		{name: "binary suffix", in: "1024Mi", want: "1Gi"},
		{name: "not a quantity", in: "lots", wantErr: "is not a quantity"},
		{name: "empty", in: "", wantErr: "is not a quantity"},
		{name: "negative", in: "-1", wantErr: "must be positive"},
		{name: "zero", in: "0", wantErr: "must be positive"},
		{name: "zero milli", in: "0m", wantErr: "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalQuantity(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CanonicalQuantity(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CanonicalQuantity(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    Spec
		wantErr []string
	}{
		{name: "pods and cpu", raw: `{"pods":4,"cpu":"0.5"}`, want: Spec{Pods: "4", CPU: "500m"}},
		{name: "cpu defaults to 1", raw: `{"pods":1}`, want: Spec{Pods: "1", CPU: "1"}},
		{name: "pods 50", raw: `{"pods":50,"cpu":"1000m"}`, want: Spec{Pods: "50", CPU: "1"}},
		{name: "integral float", raw: `{"pods":4.0}`, want: Spec{Pods: "4", CPU: "1"}},
		{name: "unknown fields ignored", raw: `{"pods":2,"extra":true}`, want: Spec{Pods: "2", CPU: "1"}},
		{name: "missing", raw: ``, wantErr: []string{"spec is missing"}},
		{name: "null", raw: `null`, wantErr: []string{"spec is missing"}},
		{name: "not an object", raw: `[1]`, wantErr: []string{"spec must be an object"}},
		{name: "pods missing", raw: `{"cpu":"1"}`, wantErr: []string{"spec.pods is required"}},
		{name: "pods zero", raw: `{"pods":0}`, wantErr: []string{"spec.pods must be from 1 to 50, got 0"}},
		{name: "pods 51", raw: `{"pods":51}`, wantErr: []string{"got 51"}},
		{name: "pods negative", raw: `{"pods":-3}`, wantErr: []string{"got -3"}},
		{name: "pods fraction", raw: `{"pods":2.5}`, wantErr: []string{"spec.pods must be an integer"}},
		{name: "pods string", raw: `{"pods":"4"}`, wantErr: []string{"spec.pods must be an integer", `"4"`}},
		{name: "pods huge", raw: `{"pods":1e400}`, wantErr: []string{"spec.pods must be an integer"}},
		{name: "cpu not a string", raw: `{"pods":4,"cpu":2}`, wantErr: []string{"spec.cpu must be a quantity string"}},
		{name: "both wrong", raw: `{"pods":0,"cpu":"lots"}`, wantErr: []string{"spec.pods", "spec.cpu \"lots\" is not a quantity"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSpec(json.RawMessage(tt.raw))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ParseSpec(%s) = %+v, want error", tt.raw, got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseSpec(%s) = %+v, %v; want %+v", tt.raw, got, err, tt.want)
			}
		})
	}
}
