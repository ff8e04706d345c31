package api

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/testsvc"
)

// countingRegistry is a registry core that counts calls and can be made
// to wait.
type countingRegistry struct {
	checks, reconciles atomic.Int32
	gate               chan struct{}
}

func (c *countingRegistry) RegistryStatus(context.Context, hold.Actor, uuid.UUID) (hold.Registry, error) {
	c.checks.Add(1)
	<-c.gate
	return hold.Registry{Postgres: int(c.checks.Load())}, nil
}

func (c *countingRegistry) Reconcile(context.Context, hold.Actor, uuid.UUID) (hold.Registry, error) {
	c.reconciles.Add(1)
	<-c.gate
	return hold.Registry{Postgres: 100 + int(c.reconciles.Load())}, nil
}

// TestRegistryFlights: concurrent registry checks of one event share one
// call; within the cooldown the last answer is given again (a second
// reconcile does not run); another event is its own flight; after the
// cooldown a new call runs.
func TestRegistryFlights(t *testing.T) {
	core := &countingRegistry{gate: make(chan struct{})}
	f := NewRegistryFlights(core, 5*time.Second)
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	f.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a := hold.Actor{Org: uuid.New(), Role: hold.RoleOrganizer}
	ev, other := uuid.New(), uuid.New()
	ctx := context.Background()

	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, _, err := f.Status(ctx, a, ev); err != nil {
				t.Error(err)
			}
		})
	}
	testsvc.Eventually(t, 10*time.Second, "a registry check started", func() bool { return core.checks.Load() > 0 })
	close(core.gate) // let the flight finish
	wg.Wait()
	if n := core.checks.Load(); n != 1 {
		t.Fatalf("20 concurrent checks made %d calls, want 1", n)
	}
	if _, _, err := f.Status(ctx, a, ev); err != nil || core.checks.Load() != 1 {
		t.Fatalf("check within the cooldown made a call (%d calls, %v)", core.checks.Load(), err)
	}
	r1, at1, _ := f.Reconciled(ctx, a, ev)
	r2, at2, _ := f.Reconciled(ctx, a, ev)
	if core.reconciles.Load() != 1 || r1.Postgres != r2.Postgres || !at1.Equal(at2) {
		t.Fatalf("two reconciles within the cooldown: %d runs, answers %+v@%v and %+v@%v", core.reconciles.Load(), r1, at1, r2, at2)
	}
	// The reconcile's result is the latest check too.
	if reg, _, _ := f.Status(ctx, a, ev); reg.Postgres != r1.Postgres {
		t.Fatalf("check after a reconcile: %+v, want the reconcile's %+v", reg, r1)
	}
	if _, _, err := f.Status(ctx, a, other); err != nil || core.checks.Load() != 2 {
		t.Fatalf("another event shared a flight (%d calls)", core.checks.Load())
	}
	mu.Lock()
	now = now.Add(6 * time.Second)
	mu.Unlock()
	if _, _, err := f.Reconciled(ctx, a, ev); err != nil || core.reconciles.Load() != 2 {
		t.Fatalf("reconcile after the cooldown did not run (%d runs)", core.reconciles.Load())
	}
}
