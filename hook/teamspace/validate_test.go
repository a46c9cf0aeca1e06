package teamspace

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "short", in: "alpha"},
		{name: "the longest that fits team-<name>", in: strings.Repeat("a", MaxNameLength)},
		{name: "one too long", in: strings.Repeat("a", MaxNameLength+1), wantErr: "at most 58 fit into namespace team-<name>"},
		{name: "empty", in: "", wantErr: "is empty"},
		{name: "uppercase", in: "Alpha", wantErr: "is not a DNS-1123 label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateName(tt.in)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("ValidateName(%q) = %v, want nil", tt.in, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("ValidateName(%q) = %v, want an error containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}
