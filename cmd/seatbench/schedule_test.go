package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestScheduledCountsTheWaitForAConnection: five requests due at once
// over one connection to a server taking 40 ms each: the last is sent
// about 160 ms after it was due, and its latency from its due time says
// so (corrected for coordinated omission) while the time from sending
// stays one answer's.
func TestScheduledCountsTheWaitForAConnection(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(40 * time.Millisecond)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer ts.Close()
	s := &server{base: ts.URL, http: ts.Client()}
	sessions := make([]*session, 5)
	for i := range sessions {
		sessions[i] = &session{cookie: "c=1"}
	}
	at := time.Now().Add(20 * time.Millisecond)
	first := make([]due, len(sessions))
	for i := range first {
		first[i] = due{at: at, client: i}
	}
	rs, notSent := scheduled(context.Background(), s, sessions, 1, first, at.Add(5*time.Second), http.MethodGet,
		func(int) string { return "/" }, func(int, int, []byte, time.Time) (time.Time, bool) { return time.Time{}, false })
	if len(rs) != 5 || notSent != 0 {
		t.Fatalf("%d answered, %d not sent; want 5, 0", len(rs), notSent)
	}
	fromDue, fromSend, statuses := sentLatency(rs, at, at.Add(time.Second))
	if statuses["200"] != 5 {
		t.Fatalf("statuses %v", statuses)
	}
	if fromDue.Max < 180 || fromSend.Max > 150 {
		t.Fatalf("max from due %.0f ms (want ≥ 180: five answers in a row), from sending %.0f ms (want one answer's)", fromDue.Max, fromSend.Max)
	}
}

// TestScheduledFollowsTheAnswersAndCountsWhatMissedTheEnd: each answer
// schedules its client's next request; requests due before the end that
// found no connection by then are counted as not sent, and nothing due
// after the end is sent.
func TestScheduledFollowsTheAnswersAndCountsWhatMissedTheEnd(t *testing.T) {
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/slow" {
			time.Sleep(400 * time.Millisecond)
		}
	}))
	defer ts.Close()
	s := &server{base: ts.URL, http: ts.Client()}
	sessions := []*session{{cookie: "c=1"}, {cookie: "c=2"}}
	start := time.Now()
	end := start.Add(300 * time.Millisecond)
	// One connection: client 1 is due first and its answer is slow, so
	// client 0's request, due just after, waits for the connection past
	// the end.
	first := []due{{at: start, client: 1}, {at: start.Add(10 * time.Millisecond), client: 0}}
	rs, notSent := scheduled(context.Background(), s, sessions, 1, first, end, http.MethodGet,
		func(c int) string {
			if c == 1 {
				return "/slow"
			}
			return "/fast"
		},
		func(c, _ int, _ []byte, done time.Time) (time.Time, bool) {
			return done.Add(50 * time.Millisecond), c == 0
		})
	if notSent != 1 {
		t.Fatalf("not sent %d, want 1 (client 0's request, due before the end, stuck behind the slow one)", notSent)
	}
	if len(rs) != 1 || hits.Load() != 1 {
		t.Fatalf("%d answered, %d reached the server; want only the slow one", len(rs), hits.Load())
	}

	// With room, client 0 goes on answer after answer until the end.
	hits.Store(0)
	start = time.Now()
	end = start.Add(300 * time.Millisecond)
	rs, notSent = scheduled(context.Background(), s, sessions, 2, []due{{at: start, client: 0}}, end, http.MethodGet,
		func(int) string { return "/fast" },
		func(_, _ int, _ []byte, done time.Time) (time.Time, bool) {
			return done.Add(50 * time.Millisecond), true
		})
	if notSent != 0 || len(rs) < 4 || len(rs) > 7 {
		t.Fatalf("%d answered, %d not sent; want about one every 50 ms for 300 ms", len(rs), notSent)
	}
	for _, r := range rs {
		if !r.at.Before(end) {
			t.Fatalf("a request due %s after the end was sent", r.at.Sub(end))
		}
	}
}

// TestTickRate: batches let in at ticks a second apart read as the batch
// a second, whatever the window cuts off of the first.
func TestTickRate(t *testing.T) {
	var at []float64
	for tick := range 11 {
		for range 20 {
			at = append(at, float64(1_000_000+tick*1000))
		}
	}
	n, secs := tickRate(at)
	if n != 200 || secs != 10 {
		t.Fatalf("tickRate: %d in %.1f s, want 200 in 10 s", n, secs)
	}
	if n, secs := tickRate(at[:20]); n != 0 || secs != 0 {
		t.Fatalf("one tick: %d in %.1f s, want 0 in 0", n, secs)
	}
}
