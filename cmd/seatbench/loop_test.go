package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoopTakesEveryIndexOnce: n calls over several workers, each index
// once, and ranOut once they are all taken.
func TestLoopTakesEveryIndexOnce(t *testing.T) {
	const n = 1000
	var seen [n]atomic.Int32
	ranOut, err := loop(context.Background(), 8, n, time.Time{}, func(w, i int) error {
		if w < 0 || w >= 8 {
			t.Errorf("worker %d of 8", w)
		}
		seen[i].Add(1)
		return nil
	})
	if err != nil || !ranOut {
		t.Fatalf("loop: ranOut %v, err %v; want true, nil", ranOut, err)
	}
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("index %d called %d times", i, c)
		}
	}
}

// TestLoopStopsAtFirstErrorAndDeadline: the first error is answered and
// stops the workers; a deadline ends the loop without running out.
func TestLoopStopsAtFirstErrorAndDeadline(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int64
	_, err := loop(context.Background(), 4, 1_000_000, time.Time{}, func(_, i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if c := calls.Load(); c > 1000 {
		t.Fatalf("%d calls after the error: the workers went on", c)
	}
	ranOut, err := loop(context.Background(), 2, 1<<40, time.Now().Add(20*time.Millisecond), func(int, int) error { return nil })
	if err != nil || ranOut {
		t.Fatalf("deadline: ranOut %v, err %v; want false, nil", ranOut, err)
	}
}
