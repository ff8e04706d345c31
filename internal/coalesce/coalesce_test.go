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
		time.Sleep(time.Millisecond)
	}
	// Call 2 queues behind it and gives up.
	ctx, cancel := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() {
		_, err := b.Do(ctx, 2)
		done2 <- err
	}()
	for b.Queued() != 1 {
		time.Sleep(time.Millisecond)
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
