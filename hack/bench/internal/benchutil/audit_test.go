package benchutil

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCountAudit(t *testing.T) {
	const kcm = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/7c48c2b/resourcequota-controller"
	const mc = "metacontroller/v0.0.0 (linux/amd64) kubernetes/$Format"
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","verb":"create","userAgent":"` + mc + `","objectRef":{"resource":"namespaces"},"responseStatus":{"code":201}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"` + mc + `","objectRef":{"resource":"namespaces"},"responseStatus":{"code":409}}`,
		`{"stage":"ResponseComplete","verb":"update","userAgent":"` + mc + `","objectRef":{"resource":"teamspaces","subresource":"status"}}`,
		`{"stage":"ResponseComplete","verb":"update","userAgent":"` + mc + `","objectRef":{"resource":"teamspaces","subresource":"status"}}`,
		`{"stage":"ResponseStarted","verb":"watch","userAgent":"` + mc + `","objectRef":{"resource":"limitranges"}}`,
		`{"stage":"ResponseComplete","verb":"update","userAgent":"` + kcm + `","objectRef":{"resource":"resourcequotas","subresource":"status"}}`,
		`{"stage":"Panic","verb":"get","userAgent":"fleet/v0.0.0","requestURI":"/metrics?x=1"}`,
		`{"stage":"ResponseComplete","verb":"get","userAgent":"fleet/v0.0.0","requestURI":"/metrics?x=1"}`,
		`{"stage":"ResponseComp`, // half written
	}, "\n")
	got, err := countAudit(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := AuditCounts{
		{"metacontroller", "create", "namespaces", 0}:                                              1,
		{"metacontroller", "create", "namespaces", 409}:                                            1,
		{"metacontroller", "update", "teamspaces/status", 0}:                                       2,
		{"kube-controller-manager/resourcequota-controller", "update", "resourcequotas/status", 0}: 1,
		{"fleet", "get", "/metrics", 0}:                                                            2,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
	if f := got.Format("metacontroller", 2); f != "total=2.00 update/teamspaces/status=1.00 create/namespaces=0.50 create/namespaces/409=0.50" {
		t.Errorf("Format = %q", f)
	}
	if n := got.Client("kube-controller-manager"); n != 1 {
		t.Errorf("Client(kube-controller-manager) = %g", n)
	}
	if c := got.Clients(); !cmp.Equal(c, []string{"metacontroller", "fleet", "kube-controller-manager/resourcequota-controller"}) {
		t.Errorf("Clients = %q", c)
	}
}
