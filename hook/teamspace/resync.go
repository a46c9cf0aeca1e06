package teamspace

import "hash/fnv"

// Every sync answer asks the engine to sync that TeamSpace again within a
// minute (resyncAfterSeconds), each TeamSpace at its own period in
// [ResyncMinSeconds, ResyncMinSeconds+ResyncSpreadSeconds), fixed by its uid.
// This replaces the CompositeController's resyncPeriodSeconds as the safety
// net for what no watch shows: that one fires for every TeamSpace at once,
// and with a thousand of them each burst (a GET and a hook call each) kept
// drift repairs queued behind it for seconds (BENCHMARKS.md §8). Periods
// spread by uid keep TeamSpaces created together from staying in step, and
// the answer stays a function of the request (the answer cache holds).
const (
	ResyncMinSeconds    = 30
	ResyncSpreadSeconds = 30
)

// ResyncSeconds is the resync period of the TeamSpace with this uid.
func ResyncSeconds(uid string) float64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return float64(ResyncMinSeconds + h.Sum32()%ResyncSpreadSeconds)
}
