package robust

import (
	"fmt"
	"math/rand/v2"
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

// Kills are the targets killed; Impairments those made to misbehave.
var (
	Kills       = []Target{LeadingEngine, Hook, APIServer, ControllerManager, Datastore, ArchiveStore}
	Impairments = []Target{ArchiveRefusesWrites, HookStallsPastTimeout}
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
// 60 s (uniform), a kill four times in five, else an impairment; a kill
// lasts 2 to 8 s (a unit's restart), an impairment 5 to 30 s. The same
// seed gives the same schedule, so that a failing run replays.
func Schedule(seed uint64, d time.Duration) []Fault {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	var out []Fault
	for at := between(10*time.Second, 60*time.Second); at < d; at += between(10*time.Second, 60*time.Second) {
		f := Fault{At: at}
		if r.IntN(5) < 4 {
			f.Target, f.For = Kills[r.IntN(len(Kills))], between(2*time.Second, 8*time.Second)
		} else {
			f.Target, f.For = Impairments[r.IntN(len(Impairments))], between(5*time.Second, 30*time.Second)
		}
		if f.Target == Hook || f.Target == HookStallsPastTimeout {
			f.Which = r.IntN(2)
		}
		out = append(out, f)
	}
	return out
}
