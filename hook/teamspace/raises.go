package teamspace

import (
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
// A quota not observed (being made, or deleted by hand) is bounded by
// nothing yet: asked for as the spec says, it lowers, it waits for
// nobody. A key no longer asked for (spec.memory unset) is not held
// either: the spec lifts it.

// quotaKey is one key of one quota of a namespace: team-quota's
// requests.cpu.
type quotaKey struct {
	quota string
	key   corev1.ResourceName
}

// raiseHold is what a sync holds back: the quota keys being lowered in
// some namespace of the TeamSpace, whose raises elsewhere wait.
type raiseHold map[quotaKey]bool

// holdRaises is the hold of a sync answering units: each key some unit's
// observed quota holds more of than it is asked to. One namespace alone
// raises nothing another lowers: nil.
func (o *observation) holdRaises(units []*unit) raiseHold {
	if len(units) < 2 {
		return nil
	}
	hold := raiseHold{}
	for _, u := range units {
		for _, t := range u.inside() {
			if !t.viaDecorator {
				continue
			}
			asked, observed := o.quotaHards(t, u)
			for k, want := range asked {
				if have, ok := observed[k]; ok && have.Cmp(want) > 0 {
					hold[quotaKey{t.name(u), k}] = true
				}
			}
		}
	}
	return hold
}

// held is asked, the quota t of unit u as the spec asks for it, with each
// raise of a key being lowered elsewhere answered as observed, and
// whether any is.
func (h raiseHold) held(o *observation, t *childType, u *unit, asked corev1.ResourceList) (corev1.ResourceList, bool) {
	_, observed := o.quotaHards(t, u)
	out, held := asked.DeepCopy(), false
	for k, want := range asked {
		if have, ok := observed[k]; ok && h[quotaKey{t.name(u), k}] && want.Cmp(have) > 0 {
			out[k], held = have, true
		}
	}
	return out, held
}

// quotaHards are quota t of unit u as the spec asks for it and as
// observed (nil when not observed, or not made for this spec).
func (o *observation) quotaHards(t *childType, u *unit) (asked, observed corev1.ResourceList) {
	ob := o.child(t, u)
	if q, ok := t.desired(u, ob).(*corev1.ResourceQuota); ok {
		asked = q.Spec.Hard
	}
	if ob != nil {
		if q, err := t.decode(ob); err == nil {
			observed = q.(*corev1.ResourceQuota).Spec.Hard
		}
	}
	return asked, observed
}
