package benchutil

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// AuditKey is what a request is counted by: the client (AuditClient of
// its user agent), its verb, its resource (resource/subresource, or the
// path of a request for no resource) and, for a request refused or
// failed, its HTTP code (0 for one that succeeded): a create that found
// the object there (409) is a request all the same.
type AuditKey struct {
	Client, Verb, Resource string
	Code                   int
}

// AuditCounts are requests by AuditKey.
type AuditCounts map[AuditKey]float64

// auditEvent is the part of an audit.k8s.io/v1 Event a count needs.
type auditEvent struct {
	Stage          string `json:"stage"`
	Verb           string `json:"verb"`
	UserAgent      string `json:"userAgent"`
	RequestURI     string `json:"requestURI"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// AuditSize is the audit log's size now: where the requests of a phase
// that begins now start (0 when there is no log).
func AuditSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// CountAudit counts the requests kube-apiserver recorded in its JSON audit
// log (tests/controlplane AuditEnv) from byte offset from on: one per
// completed request (ResponseComplete or Panic; a watch when it ends).
func CountAudit(path string, from int64) (AuditCounts, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	return countAudit(f)
}

func countAudit(r io.Reader) (AuditCounts, error) {
	out := AuditCounts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// the last line may be half written
			continue
		}
		if e.Stage != "ResponseComplete" && e.Stage != "Panic" {
			continue
		}
		k := AuditKey{Client: AuditClient(e.UserAgent), Verb: e.Verb}
		if e.ResponseStatus != nil && e.ResponseStatus.Code >= 400 {
			k.Code = e.ResponseStatus.Code
		}
		switch {
		case e.ObjectRef != nil && e.ObjectRef.Subresource != "":
			k.Resource = e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
		case e.ObjectRef != nil:
			k.Resource = e.ObjectRef.Resource
		default:
			k.Resource, _, _ = strings.Cut(e.RequestURI, "?")
		}
		out[k]++
	}
	return out, sc.Err()
}

// AuditClient names a client by its user agent: the program
// ("metacontroller", "fleet", "kubectl"), and for kube-controller-manager
// the controller too, which client-go appends to its user agent
// ("kube-controller-manager/resourcequota-controller").
func AuditClient(userAgent string) string {
	program, _, _ := strings.Cut(userAgent, "/")
	if program == "kube-controller-manager" {
		if i := strings.LastIndexByte(userAgent, '/'); i >= 0 && !strings.Contains(userAgent[i:], " ") {
			return program + userAgent[i:]
		}
	}
	if program == "" {
		return "?"
	}
	return program
}

// Client sums the counts of the clients whose name starts with prefix.
func (c AuditCounts) Client(prefix string) float64 {
	var n float64
	for k, v := range c {
		if strings.HasPrefix(k.Client, prefix) {
			n += v
		}
	}
	return n
}

// Format prints the counts of the clients whose name starts with prefix,
// divided by per (requests per TeamSpace): the total, then
// "verb/resource=n" pairs ("verb/resource/code=n" for those refused or
// failed), the largest first.
func (c AuditCounts) Format(prefix string, per float64) string {
	type item struct {
		key string
		n   float64
	}
	sum := map[string]float64{}
	var total float64
	for k, v := range c {
		if strings.HasPrefix(k.Client, prefix) {
			key := k.Verb + "/" + k.Resource
			if k.Code != 0 {
				key += fmt.Sprintf("/%d", k.Code)
			}
			sum[key] += v
			total += v
		}
	}
	items := make([]item, 0, len(sum))
	for k, v := range sum {
		items = append(items, item{k, v})
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.key, b.key))
	})
	var b strings.Builder
	fmt.Fprintf(&b, "total=%.2f", total/per)
	for _, it := range items {
		fmt.Fprintf(&b, " %s=%.2f", it.key, it.n/per)
	}
	return b.String()
}

// Clients are the clients of the counts, the busiest first.
func (c AuditCounts) Clients() []string {
	sum := map[string]float64{}
	for k, v := range c {
		sum[k.Client] += v
	}
	out := make([]string, 0, len(sum))
	for k := range sum {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(sum[b], sum[a]), strings.Compare(a, b)) })
	return out
}
