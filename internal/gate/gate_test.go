package gate_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seatd/internal/apperr"
	"seatd/internal/gate"
)

// TestGateBounds: with n places and a queue of q, n callers are inside at
// once, q more wait and get in as places free up, and the rest are refused
// at once with a 503 and a Retry-After of at least a second.
func TestGateBounds(t *testing.T) {
	t.Parallel()
	const n, q = 2, 3
	g := gate.New(n, 5*time.Second, q)
	ctx := context.Background()
	var inside, most atomic.Int32
	hold := make(chan struct{})
	var wg sync.WaitGroup
	var refused atomic.Int32
	enter := func() {
		leave, err := g.Enter(ctx)
		if err != nil {
			var busy *gate.Busy
			if !errors.As(err, &busy) || apperr.CodeOf(err) != apperr.Unavailable || busy.RetryAfter() < 1 {
				t.Errorf("refusal %v (%T), want a *gate.Busy of code unavailable", err, err)
			}
			refused.Add(1)
			return
		}
		now := inside.Add(1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		<-hold
		inside.Add(-1)
		leave()
		leave() // a second call gives nothing back twice
	}
	for range n + q {
		wg.Go(enter)
	}
	// Every caller is inside or waiting before the next one comes.
	deadline := time.Now().Add(5 * time.Second)
	for (inside.Load() != n || g.Waiting() != q) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // the poll interval
	}
	enter() // the gate and its queue are full: refused at once
	if refused.Load() != 1 {
		t.Fatalf("%d refused with %d inside and %d waiting, want 1", refused.Load(), n, q)
	}
	close(hold)
	wg.Wait()
	if most.Load() != n || refused.Load() != 1 {
		t.Fatalf("at most %d inside at once, %d refused; want %d and 1", most.Load(), refused.Load(), n)
	}
}

// TestGateWaitBounded: a caller waits at most the gate's wait, and no
// longer than its context.
func TestGateWaitBounded(t *testing.T) {
	t.Parallel()
	g := gate.New(1, 100*time.Millisecond, 10)
	leave, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	start := time.Now()
	_, err = g.Enter(context.Background())
	var busy *gate.Busy
	if !errors.As(err, &busy) || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("after %s: %v, want a refusal after the 100 ms wait", time.Since(start), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Enter(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller gone: %v, want its context's error", err)
	}
}
