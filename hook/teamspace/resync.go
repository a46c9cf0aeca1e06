package teamspace

import "hash/fnv"

// Drift is seen through watches: the engine syncs a TeamSpace on every event
// of it or of one of its children, and that is what repairs a hand edit
// within a second. A periodic resync repairs only what no watch shows, and
// each one costs the engine a live GET of the TeamSpace, a hook call and
// the customize hook's scan, so at a period of a minute a thousand idle
// TeamSpaces kept a fifth of a core busy (docs/design/resync.md).
//
// What a resync still catches, and how often it happens:
//   - a status edited by hand (ignoreStatusChanges keeps the engine from
//     syncing on status writes): only holders of teamspaces/status can do
//     it, and the next event of any child puts it back too;
//   - a watch event the engine missed: client-go resumes watches from their
//     resourceVersion and relists when that expired, so only a bug would;
//   - a new hook version that answers differently: install.sh restarts the
//     engine, which syncs every TeamSpace once on start (hack/deploy/README.md "Resync and repairs").
//
// None of these needs minutes, so every sync answer asks for the next one
// within hours (resyncAfterSeconds), each TeamSpace at its own period in
// [ResyncMinSeconds, ResyncMinSeconds+ResyncSpreadSeconds), fixed by its
// uid: TeamSpaces created together do not stay in step, no burst queues
// drift repairs behind it, and the answer stays a function of the request
// (the answer cache holds). The engine's own periodic replays are off
// (--cache-flush-interval=0 in the unit): they fire for every TeamSpace at
// once.
const (
	ResyncMinSeconds    = 6 * 3600
	ResyncSpreadSeconds = 6 * 3600
)

// ResyncSeconds is the resync period of the TeamSpace with this uid.
func ResyncSeconds(uid string) float64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return float64(ResyncMinSeconds + h.Sum32()%ResyncSpreadSeconds)
}
