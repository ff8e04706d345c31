package main

import (
	"container/heap"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A scheduled load is an open loop: each request has a time it is due,
// set beforehand or by the answer to the one before (a waiting page asks
// again when the last answer said), and is sent at that time whether or
// not earlier requests were answered, through a fixed number of
// connections. A request that waits for a free connection counts its
// wait: latency runs from the due time (corrected for coordinated
// omission); the time from sending is kept beside it.

// due is one request to send at a time, for one client.
type due struct {
	at     time.Time
	client int
}

type dueHeap []due

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// sent is one request of a scheduled load: when it was due, how long
// after that it was sent, when its answer was read, and the status.
type sent struct {
	client int32
	status int16
	at     time.Time
	wait   time.Duration // due → sent
	done   time.Duration // due → answer read
}

// scheduled sends the requests of a scheduled load, due from first (in
// any order), until end: each client's request is method path(client) with the
// client's session over one of conns connections, and next, given the
// answer's status and body and when it was read, says when that client's
// next request is due (false: no more). Requests due at or after end are
// not sent; those due before it that found no free connection by end are
// counted as not sent.
func scheduled(ctx context.Context, s *server, sessions []*session, conns int, first []due, end time.Time,
	method string, path func(client int) string, next func(client, status int, body []byte, done time.Time) (time.Time, bool)) ([]sent, int) {
	h := dueHeap(append([]due(nil), first...))
	heap.Init(&h)
	var mu sync.Mutex
	wake := make(chan struct{}, 1)
	jobs := make(chan due)
	var inFlight atomic.Int64 // handed to a worker, its next not yet pushed
	var resultsMu sync.Mutex
	var results []sent
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			var mine []sent
			for j := range jobs {
				t := time.Now()
				status, body := ask(ctx, s, sessions[j.client], method, path(j.client))
				done := time.Now()
				mine = append(mine, sent{client: int32(j.client), status: int16(status), at: j.at, wait: t.Sub(j.at), done: done.Sub(j.at)}) // #nosec G115 -- client counts and HTTP statuses are small
				if at, ok := next(j.client, status, body, done); ok && at.Before(end) {
					mu.Lock()
					heap.Push(&h, due{at: at, client: j.client})
					mu.Unlock()
				}
				// After the push: the dispatcher, seeing nothing in
				// flight, finds the pushed request.
				inFlight.Add(-1)
				select {
				case wake <- struct{}{}:
				default:
				}
			}
			resultsMu.Lock()
			results = append(results, mine...)
			resultsMu.Unlock()
		})
	}
	notSent := 0
	endTimer := time.NewTimer(time.Until(end))
	defer endTimer.Stop()
dispatch:
	for ctx.Err() == nil {
		idle := inFlight.Load() == 0
		mu.Lock()
		var top due
		empty := h.Len() == 0
		if !empty {
			top = h[0]
		}
		mu.Unlock()
		if (!empty && !top.at.Before(end)) || (empty && idle) {
			break // nothing more due before the end, or nothing more at all
		}
		var timer <-chan time.Time
		var tm *time.Timer
		if !empty {
			tm = time.NewTimer(time.Until(top.at))
			timer = tm.C
		}
		stop := func() {
			if tm != nil {
				tm.Stop()
			}
		}
		select {
		case <-ctx.Done():
			stop()
			break dispatch
		case <-endTimer.C:
			stop()
			break dispatch
		case <-wake:
			stop()
			continue
		case <-timer:
		}
		mu.Lock()
		j := heap.Pop(&h).(due)
		mu.Unlock()
		inFlight.Add(1)
		select {
		case jobs <- j:
		case <-endTimer.C:
			notSent++
			break dispatch
		case <-ctx.Done():
			break dispatch
		}
	}
	close(jobs)
	wg.Wait()
	mu.Lock()
	for _, d := range h {
		if d.at.Before(end) {
			notSent++
		}
	}
	mu.Unlock()
	return results, notSent
}

// ask sends one bodiless request with sess's cookie and answers the
// status (0 on a transport error) and body.
func ask(ctx context.Context, s *server, sess *session, method, path string) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, nil)
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Cookie", sess.cookie)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// sentLatency is the latency of the answered requests among rs whose due
// time is in [from, to): from the due time (corrected for coordinated
// omission) and from sending; and the statuses.
func sentLatency(rs []sent, from, to time.Time) (fromDue, fromSend Latency, statuses map[string]int) {
	var a, b []float64
	statuses = map[string]int{}
	for _, r := range rs {
		if r.at.Before(from) || !r.at.Before(to) {
			continue
		}
		statuses[statusName(int(r.status))]++
		a = append(a, ms(r.done))
		b = append(b, ms(r.done-r.wait))
	}
	return latencyOf(a), latencyOf(b), statuses
}
