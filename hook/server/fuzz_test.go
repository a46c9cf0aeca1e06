package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/labhub/teamspace/hook/teamspace"
	"github.com/labhub/teamspace/tests/golden"
)

// FuzzHooks feeds arbitrary bodies, seeded with every golden request, to the
// hooks through the real handler. It must never panic, every refusal
// must be a JSON 4xx, and every 200 must hold only children the API server
// would accept: DNS-label names, the quota's namespace set, quantities that
// parse. Run longer with: go test ./hook/server -run '^$' -fuzz FuzzHooks
func FuzzHooks(f *testing.F) {
	paths := []string{"/sync", "/finalize", "/customize", "/quotas", "/templates", "/templates/customize", "/adopted", "/adopted/customize"}
	seeded := 0
	// Each case seeds the hook it was written for (which picks the path).
	for i, hook := range []string{"sync", "finalize", "customize", "quotas", "templates", "templates-customize", "adopted", "adopted-customize"} {
		for _, dir := range golden.Cases(f, testdata, hook) {
			f.Add(uint8(i), golden.Request(f, testdata, dir))
			seeded++
		}
	}
	if seeded == 0 {
		f.Fatal("no seeds")
	}
	f.Add(uint8(0), []byte(`{"parent":{"apiVersion":"platform.labhub.io/v1alpha1","kind":"TeamSpace","metadata":{"name":"a","uid":"u"},"spec":{"pods":1}}}`))
	h := newHandler(f, f.TempDir(), Config{})
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		path := paths[int(which)%len(paths)]
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s answered %d with non-JSON %q", path, rec.Code, rec.Body.Bytes())
		}
		switch {
		case rec.Code == http.StatusOK:
		case rec.Code >= 400 && rec.Code < 500:
			return
		case rec.Code == http.StatusInternalServerError && path == "/finalize":
			return // an archive write that failed; the directory is a temp dir
		default:
			t.Fatalf("%s answered %d: %s", path, rec.Code, rec.Body.Bytes())
		}
		switch path {
		case "/customize", "/templates/customize", "/adopted/customize":
			return
		case "/adopted":
			// Labels the engine writes on a namespace: each a label the
			// API server accepts, or null (removed).
			var resp struct {
				Labels map[string]*string `json:"labels"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Fatal(err)
			}
			for k, v := range resp.Labels {
				if errs := validation.IsQualifiedName(k); len(errs) > 0 {
					t.Fatalf("label key %q: %v", k, errs)
				}
				if v != nil {
					if errs := validation.IsValidLabelValue(*v); len(errs) > 0 {
						t.Fatalf("label %s=%q: %v", k, *v, errs)
					}
				}
			}
			return
		case "/quotas", "/templates":
			// The DecoratorController's answer: its attachments are
			// children as the engine applies them.
			var resp map[string]json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
				t.Fatal(err)
			}
			checkChildren(t, []byte(`{"children":`+string(resp["attachments"])+`}`))
			return
		}
		checkChildren(t, rec.Body.Bytes())
	})
}

func checkChildren(t *testing.T, body []byte) {
	var resp struct {
		Children []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				Hard map[string]string `json:"hard"`
			} `json:"spec"`
		} `json:"children"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Children == nil {
		t.Fatalf("children is null (the engine would delete everything): %s", body)
	}
	for _, c := range resp.Children {
		// The platform's copies keep their template's name, a DNS
		// subdomain; every child of the hook's own is a DNS label.
		nameErrs := validation.IsDNS1123Label(c.Metadata.Name)
		switch c.Kind {
		case "ConfigMap", "Secret", "RoleBinding", "NetworkPolicy":
			nameErrs = validation.IsDNS1123Subdomain(c.Metadata.Name)
		}
		if len(nameErrs) > 0 {
			t.Fatalf("child name %q: %v", c.Metadata.Name, nameErrs)
		}
		switch c.Kind {
		case "Namespace":
		case "ResourceQuota":
			if errs := validation.IsDNS1123Label(c.Metadata.Namespace); len(errs) > 0 {
				t.Fatalf("quota namespace %q: %v", c.Metadata.Namespace, errs)
			}
			for k, v := range c.Spec.Hard {
				if _, err := resource.ParseQuantity(v); err != nil {
					t.Fatalf("quota %s=%q does not parse: %v", k, v, err)
				}
			}
		case "LimitRange", "RoleBinding", "NetworkPolicy", "ConfigMap", "Secret":
			if errs := validation.IsDNS1123Label(c.Metadata.Namespace); len(errs) > 0 {
				t.Fatalf("%s namespace %q: %v", c.Kind, c.Metadata.Namespace, errs)
			}
		case "ClusterRole", "ClusterRoleBinding":
			if c.Metadata.Namespace != "" || !strings.HasPrefix(c.Metadata.Name, teamspace.OwnerAccessPrefix) {
				t.Fatalf("%s %s/%s: want cluster-scoped and named %s<TeamSpace>", c.Kind, c.Metadata.Namespace, c.Metadata.Name, teamspace.OwnerAccessPrefix)
			}
		default:
			t.Fatalf("unexpected child kind %q", c.Kind)
		}
	}
}
