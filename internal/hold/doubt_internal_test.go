package hold

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestDoubtfulLocksKeptOncePerSeatAndHold: syncs of a seat's later states
// report the same kept lock again and again; it stays one entry, checked
// at its earliest time, and repeats never fill the bound for other locks.
func TestDoubtfulLocksKeptOncePerSeatAndHold(t *testing.T) {
	ev := newEventState(uuid.New(), uuid.New())
	seat, hold, other := uuid.New(), uuid.New(), uuid.New()
	t0 := time.Now()
	for i := range maxDoubtful + 10 {
		ev.doubt(doubtfulLock{seat: seat, hold: hold, notBefore: t0.Add(time.Duration(maxDoubtful-i) * time.Millisecond)})
	}
	ev.doubt(doubtfulLock{seat: seat, hold: other, notBefore: t0.Add(time.Hour)})
	if n := len(ev.doubtful); n != 2 {
		t.Fatalf("%d doubtful locks kept, want 2 (one per seat and hold)", n)
	}
	if due := ev.due(t0.Add(-10 * time.Millisecond)); len(due) != 0 {
		t.Fatalf("due before the earliest report's time: %+v", due)
	}
	due := ev.due(t0)
	if len(due) != 1 || due[0].hold != hold || !due[0].notBefore.Equal(t0.Add(-9*time.Millisecond)) {
		t.Fatalf("due at t0: %+v, want hold %s from its earliest time", due, hold)
	}
	if due := ev.due(t0); len(due) != 0 {
		t.Fatalf("a lock handed out twice: %+v", due)
	}
	if due := ev.due(t0.Add(time.Hour)); len(due) != 1 || due[0].hold != other {
		t.Fatalf("due an hour on: %+v, want hold %s", due, other)
	}
}
