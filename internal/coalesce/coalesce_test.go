package coalesce_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seatd/internal/coalesce"
)

// TestEveryCallAnsweredOnce: 500 concurrent calls through 2 slots of at
// most 16 each get their own answer, in batches no larger than 16, and
// queued calls go together (fewer batches than calls).
func TestEveryCallAnsweredOnce(t *testing.T) {
	var batches, biggest atomic.Int64
	b := coalesce.New(2, 16, func(_ context.Context, batch []*coalesce.Call[int, int]) {
		batches.Add(1)
		if n := int64(len(batch)); n > biggest.Load() {
			biggest.Store(n)
		}
		time.Sleep(time.Millisecond) // a round trip
		for _, c := range batch {
			c.Answer(c.Req * 2)
		}
	})
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Go(func() {
			got, err := b.Do(context.Background(), i)
			if err != nil || got != 2*i {
				t.Errorf("call %d answered %d, %v", i, got, err)
			}
		})
	}
	wg.Wait()
	if biggest.Load() > 16 || batches.Load() >= 500 {
		t.Fatalf("%d batches, the biggest %d calls, for 500 calls of at most 16", batches.Load(), biggest.Load())
	}
	t.Logf("500 calls in %d batches (biggest %d)", batches.Load(), biggest.Load())
}

// TestCancelledBeforeSent: a queued call whose caller gives up is
// withdrawn (the batch never sees it); one already taken is answered
// whatever the caller's deadline.
func TestCancelledBeforeSent(t *testing.T) {
	var sent []int
	var mu sync.Mutex
	release := make(chan struct{})
	b := coalesce.New(1, 8, func(_ context.Context, batch []*coalesce.Call[int, int]) {
		mu.Lock()
		for _, c := range batch {
			sent = append(sent, c.Req)
		}
		mu.Unlock()
		<-release
		for _, c := range batch {
			c.Answer(c.Req)
		}
	})
	// Call 1 takes the slot and blocks in run.
	done1 := make(chan error, 1)
	go func() {
		_, err := b.Do(context.Background(), 1)
		done1 <- err
	}()
	for {
		mu.Lock()
		n := len(sent)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond) // poll interval: call 1 is in run
	}
	// Call 2 queues behind it and gives up.
	ctx, cancel := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() {
		_, err := b.Do(ctx, 2)
		done2 <- err
	}()
	for b.Queued() != 1 {
		time.Sleep(time.Millisecond) // poll interval: call 2 is queued
	}
	cancel()
	if err := <-done2; !errors.Is(err, context.Canceled) {
		t.Fatalf("withdrawn call: %v", err)
	}
	close(release)
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	// Call 3, cancelled while in its batch, still gets its answer.
	ctx3, cancel3 := context.WithCancel(context.Background())
	got, err := coalesce.New(1, 8, func(_ context.Context, batch []*coalesce.Call[int, int]) {
		cancel3()
		for _, c := range batch {
			c.Answer(c.Req)
		}
	}).Do(ctx3, 3)
	if err != nil || got != 3 {
		t.Fatalf("taken call: %d, %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 1 || sent[0] != 1 {
		t.Fatalf("sent %v, want only call 1", sent)
	}
}

// TestApartBatchesShareNoKey: 600 calls, each with one or two of 6 keys,
// through 3 slots kept apart by key. No two batches in flight at once
// have a key in common, every call is answered once with its own answer,
// and batches still run side by side when their keys differ.
func TestApartBatchesShareNoKey(t *testing.T) {
	type req struct {
		id   int
		keys []uint64
	}
	var mu sync.Mutex
	inFlight := map[uint64]int{} // key → batches in flight having it
	var overlaps, together, running, batches int
	b := coalesce.New(3, 8, func(_ context.Context, batch []*coalesce.Call[req, int]) {
		keys := map[uint64]bool{}
		for _, c := range batch {
			for _, k := range c.Req.keys {
				keys[k] = true
			}
		}
		mu.Lock()
		batches++
		for k := range keys {
			if inFlight[k] > 0 {
				overlaps++
			}
			inFlight[k]++
		}
		running++
		if running > 1 {
			together++
		}
		mu.Unlock()
		time.Sleep(200 * time.Microsecond) // a transaction holding its row locks
		mu.Lock()
		for k := range keys {
			inFlight[k]--
		}
		running--
		mu.Unlock()
		for _, c := range batch {
			c.Answer(c.Req.id)
		}
	})
	b.Apart(func(r req) []uint64 { return r.keys })
	var wg sync.WaitGroup
	for i := range 600 {
		r := req{id: i, keys: []uint64{uint64(i % 6)}}
		if i%5 == 0 {
			r.keys = append(r.keys, uint64((i+1)%6))
		}
		wg.Go(func() {
			got, err := b.Do(context.Background(), r)
			if err != nil || got != r.id {
				t.Errorf("call %d answered %d, %v", r.id, got, err)
			}
		})
	}
	wg.Wait()
	if overlaps > 0 {
		t.Fatalf("%d times a batch went while another batch in flight had one of its keys", overlaps)
	}
	if together == 0 {
		t.Fatalf("no two of %d batches ran at once: keeping batches apart serialized them all", batches)
	}
	t.Logf("600 calls in %d batches, %d started beside another", batches, together)
}

// TestApartWithdrawWhileWaiting: a call queued behind a batch in flight
// with its key can still be withdrawn by its caller, and the batch's
// other calls are unaffected.
func TestApartWithdrawWhileWaiting(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	b := coalesce.New(2, 8, func(_ context.Context, batch []*coalesce.Call[uint64, uint64]) {
		if batch[0].Req == 1 {
			close(started)
			<-release
		}
		for _, c := range batch {
			c.Answer(c.Req)
		}
	})
	b.Apart(func(k uint64) []uint64 { return []uint64{k} })
	first := make(chan uint64, 1)
	go func() {
		got, _ := b.Do(context.Background(), 1)
		first <- got
	}()
	<-started
	// A free slot, but key 1 is in flight: this call waits, then gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.Do(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call queued behind its key answered %v, want its deadline", err)
	}
	// Another key goes through the free slot meanwhile.
	if got, err := b.Do(context.Background(), 2); err != nil || got != 2 {
		t.Fatalf("key 2 beside key 1 in flight: %d, %v", got, err)
	}
	close(release)
	if got := <-first; got != 1 {
		t.Fatalf("the first call answered %d", got)
	}
	if n := b.Queued(); n != 0 {
		t.Fatalf("%d calls left queued", n)
	}
}
