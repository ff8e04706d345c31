package chaos

import (
	"context"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"seatd/internal/testsvc"
)

// TestRestartRehydrates kills a process that had the event cached, changes
// seats while it is down, restarts it, and checks that the very first map
// it serves (loaded lazily on that request) and the first socket on it
// equal Postgres, and that it hears later changes again.
func TestRestartRehydrates(t *testing.T) {
	c := newCluster(t, clusterOptions{nodes: 2, sections: 1, rows: 2, perRow: 10})
	p1, p2 := c.nodes[0], c.nodes[1]
	cls := c.buyers(t, 2)
	cl, watcher := cls[0], cls[1]
	ctx := context.Background()
	var holds []holdAnswer
	for _, seat := range c.seats[:4] {
		holds = append(holds, c.mustHold(t, cl, p1, seat))
	}
	if _, err := cl.seats(ctx, p2, c.event.ID); err != nil {
		t.Fatal(err)
	}

	p2.kill()
	// While p2 is down: a release, a sale, new holds.
	if status, err := releaseOn(ctx, cl, p1, holds[0].ID); err != nil || status != http.StatusNoContent {
		t.Fatalf("release: %d %v", status, err)
	}
	status, body, err := cl.call(ctx, p1, http.MethodPost, "/api/v1/events/"+c.event.ID.String()+"/purchase",
		map[string][]string{"hold_ids": {holds[1].ID.String()}}, http.Header{"Idempotency-Key": {"restart-1"}})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("purchase: %d %v %s", status, err, body)
	}
	for _, seat := range c.seats[4:7] {
		c.mustHold(t, cl, p1, seat)
	}
	start := time.Now()
	p2.start()
	restart := time.Since(start)

	truth, err := c.pgSeats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	first, err := cl.seats(ctx, p2, c.event.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restart to ready %s; first map (lazy load) in %s", restart.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if d := diffSeats(first, truth); d != "" {
		t.Errorf("first map after restart differs from postgres: %s", d)
	}
	ws, stop, live := startWatchers(c, []*client{watcher, watcher})
	t.Cleanup(stop)
	if live {
		for _, w := range ws {
			if w.n != p2 {
				continue
			}
			if d := diffSeats(w.snapshot(), truth); d != "" {
				t.Errorf("first socket map on the restarted process differs: %s", d)
			}
		}
	}
	// It hears changes again.
	c.mustHold(t, cl, p1, c.seats[10])
	var d string
	if !testsvc.Poll(2*time.Second, func() bool {
		truth, err := c.pgSeats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d = diffSeats(mustSeats(t, cl, p2, c), truth)
		if live && d == "" {
			for _, w := range ws {
				if d = diffSeats(w.snapshot(), truth); d != "" {
					d = w.n.name + " socket: " + d
					break
				}
			}
		}
		return d == ""
	}) {
		t.Fatalf("a hold after the restart is not seen within 2 s: %s", d)
	}
}

// TestGracefulShutdown sends SIGTERM to a process with requests in flight
// and live sockets open: the requests complete (201), the sockets are
// closed with 1012 (service restart), new connections are refused, and the
// process exits 0 within its shutdown timeout.
func TestGracefulShutdown(t *testing.T) {
	const shutdownTimeout = 5 * time.Second
	c := newCluster(t, clusterOptions{nodes: 1, sections: 1, rows: 2, perRow: 10,
		env: map[string]string{"SEATD_SHUTDOWN_TIMEOUT": shutdownTimeout.String()}})
	n := c.nodes[0]
	cls := c.buyers(t, 3)
	ctx := context.Background()
	ws, stopWatchers, live := startWatchers(c, cls[1:])
	t.Cleanup(stopWatchers)
	if _, err := cls[0].seats(ctx, n, c.event.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cls[0].call(ctx, n, http.MethodGet, "/api/v1/me", nil, nil); err != nil {
		t.Fatal(err)
	}
	// Postgres answers slowly, so the holds are still running when the
	// signal comes.
	heal := c.toxic(t, true, "latency", "downstream", map[string]any{"latency": 400}, n)
	defer heal()
	const inflight = 8
	statuses := make([]int, inflight)
	errs := make([]error, inflight)
	var wg sync.WaitGroup
	for i := range inflight {
		wg.Go(func() {
			statuses[i], _, errs[i] = c.holdOn(ctx, cls[0], n, c.seats[i])
		})
	}
	time.Sleep(150 * time.Millisecond) // the holds reach the process and wait on Postgres (400 ms)
	sent := time.Now()
	exited := n.signal(syscall.SIGTERM)
	n.up.Store(false)

	// New connections are refused while the old requests finish (the
	// listener closes as the signal is handled: a moment after sending it).
	time.Sleep(50 * time.Millisecond)
	if _, _, err := c.holdOn(ctx, cls[0], n, c.seats[15]); err == nil {
		t.Errorf("a request after SIGTERM was served")
	}
	wg.Wait()
	for i := range inflight {
		if errs[i] != nil || statuses[i] != http.StatusCreated {
			t.Errorf("in-flight hold %d: %d %v", i, statuses[i], errs[i])
		}
	}
	select {
	case <-exited:
	case <-time.After(shutdownTimeout + 2*time.Second):
		t.Fatalf("still running %s after SIGTERM", time.Since(sent))
	}
	took := time.Since(sent)
	if code := n.exitCode(); code != 0 {
		t.Errorf("exit code %d, want 0:\n%s", code, n.logTail(20))
	}
	if took > shutdownTimeout {
		t.Errorf("shutdown took %s, over the %s timeout", took, shutdownTimeout)
	}
	t.Logf("%d in-flight holds completed; exit after %s", inflight, took.Round(time.Millisecond))
	if !live {
		t.Log("no live route: socket close codes not checked")
		return
	}
	// The watchers note the close frames as they read them.
	testsvc.Poll(time.Second, func() bool {
		for _, w := range ws {
			if w.closeCount(1012) < 1 {
				return false
			}
		}
		return true
	})
	for i, w := range ws {
		if got := w.closeCount(1012); got < 1 {
			err, _ := w.lastErr.Load().(string)
			t.Errorf("socket %d was not closed with 1012 (last error %q)", i, err)
		}
	}
	pg, _ := c.pgSeats(ctx)
	held := 0
	for _, seat := range c.seats[:inflight] {
		if pg[seat].Status == "held" {
			held++
		}
	}
	if held != inflight {
		t.Errorf("%d of %d in-flight holds are in postgres", held, inflight)
	}
}
