package teamspace

import (
	"fmt"
	"testing"
)

func TestResyncSeconds(t *testing.T) {
	seen := map[float64]int{}
	for i := 0; i < 1000; i++ {
		uid := fmt.Sprintf("6f1c2d3e-0000-4000-8000-%012d", i)
		s := ResyncSeconds(uid)
		if s < ResyncMinSeconds || s >= ResyncMinSeconds+ResyncSpreadSeconds || s != float64(int(s)) {
			t.Fatalf("ResyncSeconds(%s) = %v, want a whole number in [%d, %d)", uid, s, ResyncMinSeconds, ResyncMinSeconds+ResyncSpreadSeconds)
		}
		if again := ResyncSeconds(uid); again != s {
			t.Fatalf("ResyncSeconds(%s) = %v, then %v: want the same answer for the same uid", uid, s, again)
		}
		seen[s]++
	}
	// Spread: a thousand TeamSpaces use every period, none more than twice
	// its share (33 of 1000 per second).
	if len(seen) != ResyncSpreadSeconds {
		t.Errorf("%d distinct periods over 1000 uids, want all %d", len(seen), ResyncSpreadSeconds)
	}
	for s, n := range seen {
		if n > 2*1000/ResyncSpreadSeconds {
			t.Errorf("period %vs taken by %d of 1000 TeamSpaces, want at most %d", s, n, 2*1000/ResyncSpreadSeconds)
		}
	}
}
