package teamspace

import (
	"fmt"
	"testing"
)

func TestResyncSeconds(t *testing.T) {
	const n = 10000
	const buckets = 12 // half-hour buckets over the six-hour spread
	perBucket := make([]int, buckets)
	for i := 0; i < n; i++ {
		uid := fmt.Sprintf("6f1c2d3e-0000-4000-8000-%012d", i)
		s := ResyncSeconds(uid)
		if s < ResyncMinSeconds || s >= ResyncMinSeconds+ResyncSpreadSeconds || s != float64(int(s)) {
			t.Fatalf("ResyncSeconds(%s) = %v, want a whole number in [%d, %d)", uid, s, ResyncMinSeconds, ResyncMinSeconds+ResyncSpreadSeconds)
		}
		if again := ResyncSeconds(uid); again != s {
			t.Fatalf("ResyncSeconds(%s) = %v, then %v: want the same answer for the same uid", uid, s, again)
		}
		perBucket[int(s-ResyncMinSeconds)*buckets/ResyncSpreadSeconds]++
	}
	// Spread: ten thousand TeamSpaces fill every half hour of the spread,
	// none with more than 1.5 times its share.
	for b, got := range perBucket {
		if got == 0 || got > 3*n/buckets/2 {
			t.Errorf("half hour %d of the spread holds %d of %d periods, want 1..%d", b, got, n, 3*n/buckets/2)
		}
	}
}

// TestResyncIsHours guards the cost at rest: a period of minutes makes a
// thousand idle TeamSpaces cost a fifth of a core (docs/design/resync.md).
func TestResyncIsHours(t *testing.T) {
	if ResyncMinSeconds < 3600 {
		t.Errorf("ResyncMinSeconds = %d, want at least an hour", ResyncMinSeconds)
	}
}
