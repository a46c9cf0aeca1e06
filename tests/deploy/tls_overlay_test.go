package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestKustomizeTLSOverlay: the TLS component, in an overlay of the in-cluster
// install, makes the hook serve HTTPS with a bearer token from mounted
// Secrets, and the CompositeController call it over https with the CA and
// token from the same Secrets.
func TestKustomizeTLSOverlay(t *testing.T) {
	offline(t)
	objs := kustomize(t, tlsOverlay(t))
	checks := []struct {
		name  string
		check func() error
	}{
		{"hook args name the mounted certificate, key and token", func() error {
			c, err := hookContainer(objs)
			if err != nil {
				return err
			}
			var args []string
			for _, a := range field(c, "args").([]any) {
				args = append(args, a.(string))
			}
			for _, want := range []string{"--tls-cert-file=/etc/teamspace/tls/tls.crt", "--tls-key-file=/etc/teamspace/tls/tls.key", "--bearer-token-file=/etc/teamspace/token/token"} {
				if !slices.Contains(args, want) {
					return fmt.Errorf("args %v lack %s", args, want)
				}
			}
			for _, probe := range []string{"readinessProbe", "livenessProbe"} {
				if s := str(c, probe, "httpGet", "scheme"); s != "HTTPS" {
					return fmt.Errorf("%s scheme %q, want HTTPS", probe, s)
				}
			}
			return nil
		}},
		{"Secrets are mounted", func() error {
			d := findKind(objs, "Deployment")
			got := jsonText(field(d, "spec", "template", "spec", "volumes"))
			for _, s := range []string{"teamspace-hook-tls", "teamspace-hook-token"} {
				if !strings.Contains(got, s) {
					return fmt.Errorf("volumes lack Secret %s: %s", s, got)
				}
			}
			return nil
		}},
		{"CompositeController calls https with CA and token", func() error {
			cc := find(objs, "CompositeController", "teamspace")
			for _, h := range []string{"customize", "sync", "finalize"} {
				if u := str(cc, "spec", "hooks", h, "webhook", "url"); u != "https://teamspace-hook.teamspace-system.svc/"+h {
					return fmt.Errorf("%s url %q", h, u)
				}
			}
			ec, _ := field(cc, "spec", "endpointConfigs").([]any)
			if len(ec) != 1 {
				return fmt.Errorf("endpointConfigs %s", jsonText(ec))
			}
			if got := str(ec[0], "host"); got != "teamspace-hook.teamspace-system.svc" {
				return fmt.Errorf("endpointConfigs host %q", got)
			}
			if got := str(ec[0], "caBundle", "secretRef", "name"); got != "teamspace-hook-tls" {
				return fmt.Errorf("caBundle from %q", got)
			}
			if got := str(ec[0], "authorization", "secretRef", "name"); got != "teamspace-hook-token" {
				return fmt.Errorf("token from %q", got)
			}
			return nil
		}},
		{"Service serves 443", func() error {
			s := find(objs, "Service", "teamspace-hook")
			if p := jsonText(field(s, "spec", "ports")); !strings.Contains(p, `"port": 443`) {
				return fmt.Errorf("ports %s", p)
			}
			return nil
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if err := c.check(); err != nil {
				t.Error(err)
			}
		})
	}
}
