package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Tail is the hold latency's tail at 32 open connections on a process
// with several big events in its cache (issue: every few seconds all
// connections stalled at once for hundreds of milliseconds once three or
// four 300 000-seat events were cached): p99.9 and max beside p99.
type Tail struct {
	Events        int     `json:"events"`
	SeatsPerEvent int     `json:"seats_per_event"`
	HeapMiB       float64 `json:"heap_mib"` // heap in use after a forced GC, every event cached
	Holds         *Load   `json:"holds"`
	// Stalls counts the granted holds slower than 5 × p99.
	Stalls int `json:"stalls"`
	// Trace is the runtime trace of a second window (-tail-trace), for
	// `go tool trace`; the holds of that window are TracedHolds.
	Trace       string `json:"trace,omitempty"`
	TracedHolds *Load  `json:"traced_holds,omitempty"`
	// Waits are what seatd's Postgres backends were waiting on while the
	// traced window's slowest holds ran (pg_stat_activity sampled every
	// few milliseconds), against the whole window: "active" is a backend
	// running, not waiting.
	Waits       map[string]int `json:"waits_in_slowest,omitempty"`
	WaitsWindow map[string]int `json:"waits_in_window,omitempty"`
}

// phaseTail: a fresh process, tailEvents events of tailSeats seats each
// loaded into its cache, then 32 buyers hold distinct seats of the last
// one in a closed loop for tailFor.
func (b *bench) phaseTail(ctx context.Context) error {
	b.procs.stopNamed("main", "fallback", "live", "expiry", "waitlist", "door", "room", "pay-off", "pay-on", "signin")
	s, err := b.procs.start(ctx, "tail", nil)
	if err != nil {
		return err
	}
	defer b.procs.stop(s)
	t := &Tail{Events: b.cfg.tailEvents, SeatsPerEvent: b.cfg.tailSeats}
	var ev string
	var seats []string
	for i := range t.Events {
		if ev, seats, err = b.fx.newEvent(ctx, fmt.Sprintf("tail %d", i), t.SeatsPerEvent, false); err != nil {
			return err
		}
		if err := b.load.warm(ctx, []*server{s}, ev); err != nil {
			return err
		}
	}
	heap, err := s.memoryAfterGC(ctx)
	if err != nil {
		return err
	}
	t.HeapMiB = round3(heap.heap / (1 << 20))
	buyers := b.fx.buyers[:min(32, len(b.fx.buyers))]
	half := len(seats) / 2
	t.Holds = b.load.closedLoop(ctx, []*server{s}, buyers, ev, seats[:half], b.cfg.warmup, b.cfg.tailFor, nil)
	t.Stalls = slowerThan(t.Holds.Slowest, 5*t.Holds.Latency.P99)
	if b.cfg.tailTrace {
		var samples []waitSample
		t.TracedHolds = b.load.closedLoop(ctx, []*server{s}, buyers, ev, seats[half:], b.cfg.warmup, b.cfg.tailFor, func(ctx context.Context) {
			var side sync.WaitGroup
			side.Go(func() { samples = sampleWaits(ctx, b.db, time.Now().Add(b.cfg.tailFor)) })
			t.Trace = saveTrace(ctx, b.log, s, b.cfg.tailFor, b.cfg.outDir, b.rep.Started)
			side.Wait()
		})
		t.Waits, t.WaitsWindow = waitsDuring(samples, t.TracedHolds.Slowest)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.rep.Tail = t
	l := t.Holds.Latency
	b.log.printf("tail: %d events of %d seats cached (heap %.0f MiB): holds p99 %.1f ms, p99.9 %.1f ms, max %.1f ms (%.1f × p99), %d+ over 5 × p99; %s",
		t.Events, t.SeatsPerEvent, t.HeapMiB, l.P99, l.P999, l.Max, ratio2(l.Max, l.P99), t.Stalls, t.Holds.summary())
	for _, sl := range t.Holds.Slowest {
		b.log.printf("tail: slow hold at %s: %.0f ms", sl.At.Format("15:04:05.000"), sl.MS)
	}
	if t.TracedHolds != nil {
		tl := t.TracedHolds.Latency
		b.log.printf("tail: traced window p99 %.1f ms, max %.1f ms; trace %s", tl.P99, tl.Max, t.Trace)
		for _, sl := range t.TracedHolds.Slowest {
			b.log.printf("tail: traced slow hold at %s: %.0f ms", sl.At.Format("15:04:05.000"), sl.MS)
		}
		b.log.printf("tail: Postgres waits during the slowest holds %v; over the window %v", t.Waits, t.WaitsWindow)
	}
	return nil
}

// slowerThan counts the slow requests kept over ms (at most
// slowestKept: "that many or more").
func slowerThan(slow []Slow, ms float64) int {
	n := 0
	for _, s := range slow {
		if s.MS > ms {
			n++
		}
	}
	return n
}

// saveTrace saves a runtime trace of s over d (the ops listener's
// /debug/pprof/trace) in dir, named after the run's start, and returns
// its path ("" if it failed); the trace's clock starts when the request
// is answered with its first bytes, logged here.
func saveTrace(ctx context.Context, log *progress, s *server, d time.Duration, dir string, run time.Time) string {
	url := fmt.Sprintf("%s/debug/pprof/trace?seconds=%d", s.ops, max(int(d.Seconds()), 1))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ""
	}
	started := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.printf("trace: %v", err)
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		log.printf("trace: %s", resp.Status)
		return ""
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return ""
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-tail.trace", run.Format("20060102T150405Z")))
	f, err := os.Create(filepath.Clean(path))
	if err != nil {
		return ""
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err != nil || cerr != nil {
		return ""
	}
	log.printf("trace of %s from %s: %s", s.name, started.Format("15:04:05.000"), path)
	return path
}

// waitSample is what the bench database's client backends (seatd's,
// bar the sampler) were doing at one moment.
type waitSample struct {
	at    time.Time
	waits []string // "type/event" of each backend in a statement, "active" when running
}

// sampleWaits samples pg_stat_activity every 3 ms until until.
func sampleWaits(ctx context.Context, db *pgxpool.Pool, until time.Time) []waitSample {
	var out []waitSample
	for ctx.Err() == nil && time.Now().Before(until) {
		at := time.Now()
		rows, err := db.Query(ctx, `SELECT coalesce(wait_event_type || '/' || wait_event, 'active') FROM pg_stat_activity
			WHERE datname = current_database() AND backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid()
			  AND query NOT LIKE 'LISTEN%'`)
		if err != nil {
			return out
		}
		var ws []string
		for rows.Next() {
			var w string
			if rows.Scan(&w) == nil {
				ws = append(ws, w)
			}
		}
		rows.Close()
		out = append(out, waitSample{at: at, waits: ws})
		sleepUntil(ctx, at.Add(3*time.Millisecond))
	}
	return out
}

// waitsDuring counts the waits sampled while any of the slow requests
// ran, and over every sample.
func waitsDuring(samples []waitSample, slow []Slow) (during, all map[string]int) {
	during, all = map[string]int{}, map[string]int{}
	for _, s := range samples {
		in := false
		for _, r := range slow {
			if !s.at.Before(r.At) && s.at.Before(r.At.Add(time.Duration(r.MS*float64(time.Millisecond)))) {
				in = true
				break
			}
		}
		for _, w := range s.waits {
			all[w]++
			if in {
				during[w]++
			}
		}
	}
	return during, all
}
