package robust

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Target is what a fault hits.
type Target string

// The targets of a fault run (issue #67): each process of the HA layout
// killed with SIGKILL and brought back as its systemd unit would, and two
// faults that kill nothing.
const (
	LeadingEngine         Target = "leading-engine"
	Hook                  Target = "hook"
	APIServer             Target = "kube-apiserver"
	ControllerManager     Target = "kube-controller-manager"
	Datastore             Target = "datastore"
	ArchiveStore          Target = "s3"
	ArchiveRefusesWrites  Target = "archive-refuses-writes"
	HookStallsPastTimeout Target = "hook-stalls"
)

// Kills are the targets killed; Impairments those made to misbehave;
// Targets all of them.
var (
	Kills       = []Target{LeadingEngine, Hook, APIServer, ControllerManager, Datastore, ArchiveStore}
	Impairments = []Target{ArchiveRefusesWrites, HookStallsPastTimeout}
	Targets     = append(slices.Clone(Kills), Impairments...)
)

// Fault is one fault of a run: at At after the start, Target is hit, and
// is whole again For later (a killed process restarted, an impairment
// lifted). Which is, for a hook, which of the two.
type Fault struct {
	At     time.Duration `json:"at"`
	Target Target        `json:"target"`
	Which  int           `json:"which,omitempty"`
	For    time.Duration `json:"for"`
}

func (f Fault) String() string {
	return fmt.Sprintf("+%s %s#%d for %s", f.At.Round(time.Millisecond), f.Target, f.Which, f.For.Round(time.Millisecond))
}

// Schedule is the faults a seed gives a run of length d: one every 10 to
// 60 s (uniform), or to d/9 where that is less, so that a short run has
// room for all eight targets; the targets dealt from a shuffled deck of
// all eight, dealt again when it runs out, so that every run of 90 s or
// more hits each at least once (the suite's short run of 150 s drew four
// of eight at seed 67 when each fault drew its target alone: issue #74). A
// kill lasts 2 to 8 s (a unit's restart), an impairment 5 to 30 s. The
// same seed gives the same schedule, so that a failing run replays.
func Schedule(seed uint64, d time.Duration) []Fault {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	lo, hi := 10*time.Second, min(60*time.Second, max(10*time.Second, d/time.Duration(len(Targets)+1)))
	var deck []Target
	var out []Fault
	for at := between(lo, hi); at < d; at += between(lo, hi) {
		if len(deck) == 0 {
			deck = slices.Clone(Targets)
			r.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		f := Fault{At: at, Target: deck[0]}
		deck = deck[1:]
		if slices.Contains(Impairments, f.Target) {
			f.For = between(5*time.Second, 30*time.Second)
		} else {
			f.For = between(2*time.Second, 8*time.Second)
		}
		if f.Target == Hook || f.Target == HookStallsPastTimeout {
			f.Which = r.IntN(2)
		}
		out = append(out, f)
	}
	return out
}
