package teamspace

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	_ "github.com/labhub/teamspace/tests/golden" // understands -update
	corev1 "k8s.io/api/core/v1"
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
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("CanonicalQuantity(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// seed is a spec with only pods and cpu, and so every new field's default.
func seed(pods, cpu, defaultCPU string) Spec {
	return Spec{Pods: pods, CPU: cpu, DefaultRequestCPU: defaultCPU, PodSecurity: DefaultPodSecurity, NetworkIsolation: true}
}

// manyOwners is a spec with n User owners u0, u1, ...
func manyOwners(n int) string {
	owners := make([]string, n)
	for i := range owners {
		owners[i] = fmt.Sprintf(`{"kind":"User","name":"u%d"}`, i)
	}
	return `{"pods":1,"owners":[` + strings.Join(owners, ",") + `]}`
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    Spec
		wantErr []string
	}{
		{name: "pods and cpu", raw: `{"pods":4,"cpu":"0.5"}`, want: seed("4", "500m", "125m")},
		{name: "cpu defaults to 1", raw: `{"pods":1}`, want: seed("1", "1", "1")},
		{name: "pods 50", raw: `{"pods":50,"cpu":"1000m"}`, want: seed("50", "1", "20m")},
		{name: "integral float", raw: `{"pods":4.0}`, want: seed("4", "1", "250m")},
		{name: "unknown fields ignored", raw: `{"pods":2,"extra":true}`, want: seed("2", "1", "500m")},
		{name: "default request rounded down", raw: `{"pods":3,"cpu":"1"}`, want: seed("3", "1", "333m")},
		{name: "default request at least 1m", raw: `{"pods":50,"cpu":"10m"}`, want: seed("50", "10m", "1m")},
		{name: "defaults.cpu overrides", raw: `{"pods":4,"cpu":"2","defaults":{"cpu":"0.1"}}`, want: func() Spec { s := seed("4", "2", "100m"); s.cpuDefault = "100m"; return s }()},
		{name: "defaults.cpu equal to cpu", raw: `{"pods":4,"cpu":"2","defaults":{"cpu":"2000m"}}`, want: func() Spec { s := seed("4", "2", "2"); s.cpuDefault = "2"; return s }()},
		{name: "memory", raw: `{"pods":4,"memory":"2Gi"}`, want: func() Spec { s := seed("4", "1", "250m"); s.Memory, s.DefaultRequestMemory = "2Gi", "512Mi"; return s }()},
		{name: "memory decimal rounded down to a byte", raw: `{"pods":3,"memory":"1G"}`, want: func() Spec {
			s := seed("3", "1", "333m")
			s.Memory, s.DefaultRequestMemory = "1G", "333333333"
			return s
		}()},
		{name: "defaults.memory", raw: `{"pods":4,"memory":"2Gi","defaults":{"memory":"256Mi"}}`, want: func() Spec {
			s := seed("4", "1", "250m")
			s.Memory, s.DefaultRequestMemory, s.memoryDefault = "2Gi", "256Mi", "256Mi"
			return s
		}()},
		{name: "owners", raw: `{"pods":1,"owners":[{"kind":"User","name":"ann"},{"kind":"Group","name":"devs"},{"kind":"ServiceAccount","name":"ci","namespace":"tools"}]}`,
			want: func() Spec {
				s := seed("1", "1", "1")
				s.Owners = []Owner{{Kind: "User", Name: "ann"}, {Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Name: "ci", Namespace: "tools"}}
				return s
			}()},
		{name: "restricted without isolation", raw: `{"pods":1,"podSecurity":"restricted","networkIsolation":false}`,
			want: func() Spec {
				s := seed("1", "1", "1")
				s.PodSecurity, s.NetworkIsolation = "restricted", false
				return s
			}()},
		{name: "ephemeral storage", raw: `{"pods":4,"ephemeralStorage":"8Gi"}`, want: func() Spec {
			s := seed("4", "1", "250m")
			s.EphemeralStorage, s.DefaultEphemeralStorage = "8Gi", "2Gi"
			return s
		}()},
		{name: "objects", raw: `{"pods":4,"objects":{"secrets":20,"configmaps":1,"resourcequotas":2,"services.nodeports":0}}`, want: func() Spec {
			s := seed("4", "1", "250m")
			s.Objects = map[corev1.ResourceName]int64{"secrets": 20, "configmaps": 1, "resourcequotas": 2, "services.nodeports": 0}
			return s
		}()},
		{name: "objects empty is unset", raw: `{"pods":4,"objects":{}}`, want: seed("4", "1", "250m")},
		{name: "objects unknown key", raw: `{"pods":4,"objects":{"deployments":3}}`, wantErr: []string{`spec.objects: "deployments" is not a count the quota keeps (want configmaps, persistentvolumeclaims`}},
		{name: "objects negative", raw: `{"pods":4,"objects":{"secrets":-1}}`, wantErr: []string{"spec.objects.secrets must be an integer from 0 to 100000, got -1"}},
		{name: "objects not an integer", raw: `{"pods":4,"objects":{"secrets":"3"}}`, wantErr: []string{`spec.objects.secrets must be an integer from 0 to 100000, got "3"`}},
		{name: "objects fraction", raw: `{"pods":4,"objects":{"secrets":2.5}}`, wantErr: []string{"spec.objects.secrets must be an integer"}},
		{name: "objects above the most", raw: `{"pods":4,"objects":{"secrets":100001}}`, wantErr: []string{"got 100001"}},
		{name: "objects configmaps zero", raw: `{"pods":4,"objects":{"configmaps":0}}`, wantErr: []string{"spec.objects.configmaps must be at least 1 (the namespace holds ConfigMap kube-root-ca.crt"}},
		{name: "objects one resourcequota", raw: `{"pods":4,"objects":{"resourcequotas":1}}`, wantErr: []string{"spec.objects.resourcequotas must be at least 2 (the namespace holds team-quota and team-objects)"}},
		{name: "objects not an object", raw: `{"pods":4,"objects":[1]}`, wantErr: []string{"spec.objects must be an object of counts"}},
		{name: "ephemeral storage zero", raw: `{"pods":4,"ephemeralStorage":"0"}`, wantErr: []string{`spec.ephemeralStorage "0" must be positive`}},
		{name: "ephemeral storage not a string", raw: `{"pods":4,"ephemeralStorage":4}`, wantErr: []string{"spec.ephemeralStorage must be a quantity string"}},
		{name: "owner kind unknown", raw: `{"pods":1,"owners":[{"kind":"Robot","name":"r"}]}`, wantErr: []string{"spec.owners[0].kind must be one of User, Group, ServiceAccount"}},
		{name: "owner name empty", raw: `{"pods":1,"owners":[{"kind":"User","name":""}]}`, wantErr: []string{"spec.owners[0].name must not be empty"}},
		{name: "service account without namespace", raw: `{"pods":1,"owners":[{"kind":"ServiceAccount","name":"ci"}]}`, wantErr: []string{"spec.owners[0].namespace is required"}},
		{name: "user with namespace", raw: `{"pods":1,"owners":[{"kind":"User","name":"ann","namespace":"x"}]}`, wantErr: []string{"spec.owners[0].namespace is only allowed"}},
		{name: "duplicate owners", raw: `{"pods":1,"owners":[{"kind":"User","name":"ann"},{"kind":"User","name":"ann"}]}`, wantErr: []string{`spec.owners[1].name "ann" is already spec.owners[0]'s`}},
		{name: "same name for two kinds", raw: `{"pods":1,"owners":[{"kind":"User","name":"ci"},{"kind":"ServiceAccount","name":"ci","namespace":"x"}]}`, wantErr: []string{`spec.owners[1].name "ci" is already spec.owners[0]'s`}},
		{name: "owners: 32 is the most", raw: manyOwners(MaxOwners), want: func() Spec {
			s := seed("1", "1", "1")
			for i := range MaxOwners {
				s.Owners = append(s.Owners, Owner{Kind: "User", Name: fmt.Sprintf("u%d", i)})
			}
			return s
		}()},
		{name: "owners: 33 are too many", raw: manyOwners(MaxOwners + 1), wantErr: []string{"spec.owners has 33 entries, at most 32"}},
		{name: "service account name invalid", raw: `{"pods":1,"owners":[{"kind":"ServiceAccount","name":"CI!","namespace":"tools"}]}`, wantErr: []string{`spec.owners[0].name "CI!" is not a ServiceAccount name`}},
		{name: "owners not a list", raw: `{"pods":1,"owners":{"kind":"User"}}`, wantErr: []string{"spec.owners must be a list"}},
		{name: "defaults.cpu above cpu", raw: `{"pods":4,"cpu":"1","defaults":{"cpu":"2"}}`, wantErr: []string{"spec.defaults.cpu \"2\" must not exceed spec.cpu"}},
		{name: "defaults.cpu zero", raw: `{"pods":4,"defaults":{"cpu":"0"}}`, wantErr: []string{"spec.defaults.cpu \"0\" must be positive"}},
		{name: "defaults.memory without memory", raw: `{"pods":4,"defaults":{"memory":"1Gi"}}`, wantErr: []string{"spec.defaults.memory needs spec.memory"}},
		{name: "defaults.memory above memory", raw: `{"pods":4,"memory":"1Gi","defaults":{"memory":"2Gi"}}`, wantErr: []string{"spec.defaults.memory \"2Gi\" must not exceed spec.memory"}},
		{name: "memory zero", raw: `{"pods":4,"memory":"0"}`, wantErr: []string{"spec.memory \"0\" must be positive"}},
		{name: "memory lots", raw: `{"pods":4,"memory":"lots"}`, wantErr: []string{"spec.memory \"lots\" is not a quantity"}},
		{name: "podSecurity open", raw: `{"pods":4,"podSecurity":"open"}`, wantErr: []string{"spec.podSecurity must be one of privileged, baseline, restricted, got \"open\""}},
		{name: "networkIsolation not a bool", raw: `{"pods":4,"networkIsolation":"no"}`, wantErr: []string{"spec.networkIsolation must be true or false"}},
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
		{name: "both of the wrong type", raw: `{"pods":"4","cpu":2}`, wantErr: []string{`spec.pods must be an integer from 1 to 50, got "4"`, "spec.cpu must be a quantity string such as \"500m\" or \"2\", got 2"}},
		{name: "one of the wrong type, the rest still checked", raw: `{"pods":"4","memory":"0"}`, wantErr: []string{`spec.pods must be an integer`, `spec.memory "0" must be positive`}},
		{name: "pods beyond int32 is out of range", raw: `{"pods":1000000000000000000000000000000}`, wantErr: []string{"spec.pods must be from 1 to 50, got 1000000000000000000000000000000"}},
		{name: "pods below int32 is out of range", raw: `{"pods":-3000000000}`, wantErr: []string{"spec.pods must be from 1 to 50, got -3000000000"}},
		{name: "pods null is missing", raw: `{"pods":null}`, wantErr: []string{"spec.pods is required"}},
		{name: "objects count as an integral float", raw: `{"pods":4,"objects":{"secrets":3.0}}`, want: func() Spec {
			s := seed("4", "1", "250m")
			s.Objects = map[corev1.ResourceName]int64{"secrets": 3}
			return s
		}()},
		{name: "objects beyond int64", raw: `{"pods":4,"objects":{"secrets":1e30}}`, wantErr: []string{"spec.objects.secrets must be an integer from 0 to 100000, got 1e30"}},
		{name: "defaults not an object", raw: `{"pods":4,"defaults":"1"}`, wantErr: []string{`spec.defaults must be an object with cpu and memory quantity strings, got "1"`}},
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
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseSpec(%s) = %+v, %v; want %+v", tt.raw, got, err, tt.want)
			}
		})
	}
}
