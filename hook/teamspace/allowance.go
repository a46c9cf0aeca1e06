package teamspace

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/labhub/teamspace/hook/allowance"
	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// The allowance of a TeamSpace's requester is package allowance's rule;
// here the hook gathers what it needs from the request: the limits
// ConfigMap and the requester's other TeamSpaces, which the engine shows
// as related objects (Customize).
var (
	limitsKey     = "ConfigMap.v1"
	teamSpacesKey = v1alpha1.Kind + "." + v1alpha1.APIVersion
)

// AllowanceEntry is a TeamSpace as the allowance sees it, from its
// metadata and raw spec: the hook's reading of the spec, so that `kubectl
// teamspace allowance` counts what the hook counts.
func AllowanceEntry(m *Meta, rawSpec json.RawMessage) allowance.TeamSpace {
	spec, err := ParseSpec(rawSpec)
	if err != nil {
		return allowanceEntry(m, nil)
	}
	return allowanceEntry(m, &spec)
}

// allowanceEntry is AllowanceEntry of a parsed spec, nil if invalid.
func allowanceEntry(m *Meta, spec *Spec) allowance.TeamSpace {
	req, counted := allowance.RequesterOf(m.Labels, m.Annotations)
	ts := allowance.TeamSpace{Name: m.Name, UID: m.UID, Created: m.CreationTimestamp, Requester: req, Counted: counted}
	if spec != nil {
		h := allowance.Holding{CPU: resource.MustParse(spec.CPU)}
		h.Pods, _ = strconv.ParseInt(spec.Pods, 10, 64)
		if spec.Memory != "" {
			h.Memory, h.MemorySet = resource.MustParse(spec.Memory), true
		}
		ts.Holding = &h
	}
	return ts
}

// overAllowance says why the TeamSpace, whose valid spec is spec, gets no
// new children: it does not fit its requester's allowance beside their
// older TeamSpaces (allowance.Serve), or the allowance cannot be read.
func (o *observation) overAllowance(spec Spec) (reason, msg string, over bool) {
	self := allowanceEntry(&o.parent.Metadata, &spec)
	if !self.Counted {
		return "", "", false
	}
	name := self.Requester.Name
	cm := o.limits()
	if cm == nil {
		return v1alpha1.ReasonLimitsInvalid, fmt.Sprintf("%s is missing: the allowance of requester %s cannot be read; nothing new is created until the platform restores it", allowance.Source, name), true
	}
	a, err := allowance.Parse(cm.Data)
	if err != nil {
		return v1alpha1.ReasonLimitsInvalid, fmt.Sprintf("%v: the allowance of requester %s cannot be read; nothing new is created until the platform fixes it", err, name), true
	}
	if !a.Bounded() {
		return "", "", false
	}
	all := []allowance.TeamSpace{self}
	for _, ts := range o.siblings() {
		if ts.Metadata.UID != self.UID {
			all = append(all, AllowanceEntry(&ts.Metadata, ts.Spec))
		}
	}
	served, _ := allowance.Serve(a, self.Requester, all)
	for _, s := range served {
		if s.UID != self.UID || len(s.Over) == 0 {
			continue
		}
		msg = fmt.Sprintf("beyond the allowance of requester %s (%s): their older TeamSpaces within it hold %s; this one would bring %s", name, allowance.Source, s.Before, strings.Join(s.Over, ", "))
		if len(s.Skipped) > 0 {
			msg += fmt.Sprintf(" (older ones beyond it too: %s)", strings.Join(s.Skipped, ", "))
		}
		return v1alpha1.ReasonAllowanceExceeded, msg, true
	}
	return "", "", false
}
