package teamspace

import (
	"fmt"
	"testing"
)

// TestDefaultRequestIsCanonical: every computed default request is already
// in the form the API server stores (parsing and printing it again gives the
// same string), so the LimitRange never causes a write at steady state; and
// pods of that size fit the total.
func TestDefaultRequestIsCanonical(t *testing.T) {
	totals := []struct{ cpu, memory string }{
		{"1", "1Gi"}, {"500m", "2Gi"}, {"0.5", "1G"}, {"2", "3Gi"}, {"10m", "100Mi"}, {"1e3", "1e9"}, {"7", "5000Ki"}, {"1m", "1"},
	}
	for _, tot := range totals {
		for pods := 1; pods <= MaxPods; pods++ {
			name := fmt.Sprintf("cpu %s memory %s pods %d", tot.cpu, tot.memory, pods)
			raw := fmt.Sprintf(`{"pods":%d,"cpu":%q,"memory":%q}`, pods, tot.cpu, tot.memory)
			s, err := ParseSpec([]byte(raw))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, q := range []string{s.DefaultRequestCPU, s.DefaultRequestMemory} {
				if c, err := CanonicalQuantity(q); err != nil || c != q {
					t.Errorf("%s: default request %q is not canonical (%q, %v)", name, q, c, err)
				}
			}
		}
	}
}
