package teamspace

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// A share moved between two namespaces of a TeamSpace (spec.namespaces[].cpu
// changed, team-<name> taking the rest) lowers one quota and raises
// another. Each namespace's quotas are written apart: by the
// DecoratorController, one sync per namespace's LimitRange, in no order;
// as the CompositeController's children, one write each. Raised first,
// the team's quotas add up to more than its totals until the other one is
// lowered, and the team may start more than it was given (the fault run's
// quotas-within-totals saw 4100m against 4000m). So a raise waits for the
// lowerings: while some namespace's quota is observed holding more of a
// key than it is asked to, every raise of that key is answered as
// observed. The lowering, once observed, is a change of a child (the
// quota, or the LimitRange that reports it): the TeamSpace is synced
// again and the raise follows, one pass later. Ready waits for it (the
// wanted quota is the spec's, not the held one).
//
// A namespace on its way out gives its share back the same way. One
// whose removal is confirmed (or that is terminating) keeps running its
// pods until they are gone, and its LimitRange, the carrier of its quotas,
// goes first (the engine deletes it with the namespace): its share is no
// longer reserved (reserve) while its quotas and pods still count. Every
// raise waits until the namespace is gone. A released adopted namespace
// stays: a raise of a key its quotas still hold waits until they are gone.
//
// A quota not observed (being made, or deleted by hand) is bounded by
// nothing yet: asked for as the spec says, it lowers, it waits for
// nobody. A key no longer asked for (spec.memory unset) is not held
// either: the spec lifts it.

// quotaTypes are the quotas a namespace of a team holds.
var quotaTypes = []*childType{quotaType, objectsQuotaType}

// quotaKey is one key of one quota of a namespace: team-quota's
// requests.cpu.
type quotaKey struct {
	quota string
	key   corev1.ResourceName
}

// raiseHold is what a sync holds back: the quota keys being lowered in
// some namespace of the TeamSpace, whose raises elsewhere wait; every
// key (all) while a namespace on its way out is still there.
type raiseHold struct {
	keys map[quotaKey]bool
	all  bool
}

// holds reports whether a raise of key of quota is held.
func (h *raiseHold) holds(quota string, key corev1.ResourceName) bool {
	return h != nil && (h.all || h.keys[quotaKey{quota, key}])
}

// holdRaises is the hold of a sync: each key some answered namespace's
// observed quota holds more of than it is asked to, or a released one's
// quotas still hold; every key while a namespace whose removal is
// confirmed, or that is terminating, is there. Nil when nothing is held
// (one namespace alone raises nothing another lowers).
func (p *plan) holdRaises() *raiseHold {
	o := p.o
	hold := &raiseHold{keys: map[quotaKey]bool{}}
	for _, u := range p.unasked {
		if _, state := o.namespace(u); state != namespaceMissing && (state == namespaceTerminating || slices.Contains(p.removed, u)) {
			hold.all = true
		}
	}
	lowered := func(units []*unit, releasing bool) {
		for _, u := range units {
			types := quotaTypes // released: its quotas, whatever it was given
			if !releasing {
				types = u.inside()
			}
			for _, t := range types {
				if !t.viaDecorator {
					continue
				}
				var asked corev1.ResourceList // released: nothing, the TeamSpace's quotas go
				if !releasing {
					asked = o.askedHard(t, u)
				}
				for k, have := range o.observedHard(t, u) {
					if want, ok := asked[k]; releasing || ok && have.Cmp(want) > 0 {
						hold.keys[quotaKey{t.name(u), k}] = true
					}
				}
			}
		}
	}
	if len(p.answered) > 1 {
		lowered(p.answered, false)
	}
	lowered(p.released, true)
	if !hold.all && len(hold.keys) == 0 {
		return nil
	}
	return hold
}

// held is asked, the quota t of unit u as the spec asks for it, with each
// raise hold holds answered as observed, and whether any is.
func (h *raiseHold) held(o *observation, t *childType, u *unit, asked corev1.ResourceList) (corev1.ResourceList, bool) {
	observed := o.observedHard(t, u)
	out, held := asked.DeepCopy(), false
	for k, want := range asked {
		if have, ok := observed[k]; ok && h.holds(t.name(u), k) && want.Cmp(have) > 0 {
			out[k], held = have, true
		}
	}
	return out, held
}

// askedHard is quota t of unit u as the spec asks for it (nil when the
// spec makes none).
func (o *observation) askedHard(t *childType, u *unit) corev1.ResourceList {
	if q, ok := t.desired(u, o.child(t, u)).(*corev1.ResourceQuota); ok {
		return q.Spec.Hard
	}
	return nil
}

// observedHard is quota t of unit u as observed (nil when it is not).
func (o *observation) observedHard(t *childType, u *unit) corev1.ResourceList {
	if ob := o.child(t, u); ob != nil {
		if q, err := t.decode(ob); err == nil {
			return q.(*corev1.ResourceQuota).Spec.Hard
		}
	}
	return nil
}
