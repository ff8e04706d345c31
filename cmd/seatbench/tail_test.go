package main

import (
	"testing"
	"time"
)

// TestKeepSlowestKeepsTheSlowestInOrder: of many requests, a load keeps
// the slowestKept slowest, slowest first, with when each was sent.
func TestKeepSlowestKeepsTheSlowestInOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var kept []Slow
	for i := range 100 {
		ms := float64((i * 37) % 100) // 0..99, shuffled
		kept = keepSlowest(kept, Slow{At: t0.Add(time.Duration(i) * time.Millisecond), MS: ms})
	}
	if len(kept) != slowestKept {
		t.Fatalf("kept %d, want %d", len(kept), slowestKept)
	}
	for i, s := range kept {
		if want := float64(99 - i); s.MS != want {
			t.Fatalf("kept[%d] = %.0f ms, want %.0f (%v)", i, s.MS, want, kept)
		}
	}
	if n := slowerThan(kept, 94.5); n != 5 {
		t.Fatalf("%d over 94.5 ms, want 5", n)
	}
}

// TestLatencyOfReadsTheTail: p99.9 of 2 000 samples is the second
// largest, the max the largest.
func TestLatencyOfReadsTheTail(t *testing.T) {
	s := make([]float64, 2000)
	for i := range s {
		s[i] = float64(i + 1)
	}
	l := latencyOf(s)
	if l.P999 != 1998 || l.Max != 2000 || l.P99 != 1980 {
		t.Fatalf("p99 %.0f, p99.9 %.0f, max %.0f; want 1980, 1998, 2000", l.P99, l.P999, l.Max)
	}
}

// TestWaitsDuringCountsOnlyTheSlowRequests: samples taken while a slow
// request ran count as "during"; all count over the window.
func TestWaitsDuringCountsOnlyTheSlowRequests(t *testing.T) {
	t0 := time.Unix(1000, 0)
	samples := []waitSample{
		{at: t0, waits: []string{"active"}},
		{at: t0.Add(150 * time.Millisecond), waits: []string{"IO/WALSync", "active"}},
		{at: t0.Add(400 * time.Millisecond), waits: []string{"LWLock/WALWrite"}},
	}
	during, all := waitsDuring(samples, []Slow{{At: t0.Add(100 * time.Millisecond), MS: 200}})
	if len(during) != 2 || during["IO/WALSync"] != 1 || during["active"] != 1 {
		t.Fatalf("during %v", during)
	}
	if all["active"] != 2 || all["LWLock/WALWrite"] != 1 || all["IO/WALSync"] != 1 {
		t.Fatalf("all %v", all)
	}
}
