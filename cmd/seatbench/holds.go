package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Load is one measured load: HTTP buyers against seatd, or pgbench.
type Load struct {
	Clients  int            `json:"clients"`
	Procs    int            `json:"procs,omitempty"`
	Seconds  float64        `json:"seconds"` // measured window
	Holds    int            `json:"holds"`   // granted within the window
	Failed   int            `json:"failed"`  // anything else within the window
	Statuses map[string]int `json:"statuses,omitempty"`
	Rate     float64        `json:"holds_per_second"`
	Latency  Latency        `json:"latency"`
	CPU      CPU            `json:"cpu"`
	// CPUPerHold is microseconds of CPU per granted hold, by party.
	CPUPerHold CPU  `json:"cpu_us_per_hold"`
	RanOut     bool `json:"ran_out_of_seats,omitempty"`
	// Counters are deltas over the window, summed over the servers, of the
	// seatd metrics in windowCounters that the servers expose.
	Counters map[string]float64 `json:"counters,omitempty"`
	// Offered is the paced rate asked for (holds/s); 0 for a closed loop
	// (as fast as answers come back).
	Offered float64 `json:"offered_per_second,omitempty"`
	Note    string  `json:"note,omitempty"`
}

// windowCounters are the server metrics whose change over a window the
// bench records: Postgres round trips per hold, from the hold path and
// from the session store. Counters a seatd build lacks are left out.
var windowCounters = []string{
	"seatd_hold_pg_writes_total",
	"seatd_hold_batch_statements_total",
	"seatd_hold_batch_rows_total",
	"seatd_session_store_reads_total",
	"seatd_session_store_writes_total",
}

func (b *bench) counters(ctx context.Context, servers []*server) map[string]float64 {
	out := map[string]float64{}
	for _, s := range servers {
		m, err := s.metrics(ctx)
		if err != nil {
			continue
		}
		for _, k := range windowCounters {
			if v, ok := m[k]; ok {
				out[k] += v
			}
		}
	}
	return out
}

func delta(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range b {
		if v0, ok := a[k]; ok {
			out[k] = v - v0
		}
	}
	return out
}

func (l *Load) finish() {
	if l.Seconds > 0 {
		l.Rate = round3(float64(l.Holds) / l.Seconds)
	}
	if l.Holds > 0 {
		per := func(v float64) float64 { return round3(v * 1e6 / float64(l.Holds)) }
		l.CPUPerHold = CPU{Seatd: per(l.CPU.Seatd), Postgres: per(l.CPU.Postgres), Redis: per(l.CPU.Redis),
			Client: per(l.CPU.Client), Balancer: per(l.CPU.Balancer)}
	}
}

// HoldLevel is one buyer count: seatd through HTTP next to the reference.
type HoldLevel struct {
	Buyers int   `json:"buyers"`
	HTTP   *Load `json:"http"`
	// Ref is pgbench running the hold statement (distinct seats, one hold
	// per transaction) on the same Postgres, tables and machine.
	Ref *Load `json:"pgbench,omitempty"`
	// Base is what a ratio is taken against when it is not pgbench: the
	// fast path at the same count for the fallback rows, one process for
	// the multi-process rows.
	Base *Load `json:"base,omitempty"`
	// Balanced says the load went through haproxy in front of the
	// processes instead of straight to each.
	Balanced bool `json:"through_haproxy,omitempty"`
	// Shared is the true ceiling: pgbench sending seatd's shared hold
	// statement with as many holds per statement as seatd's run had, at
	// seatd's number of statements at once.
	Shared      *Load   `json:"pgbench_shared,omitempty"`
	SharedRatio float64 `json:"rate_ratio_to_shared,omitempty"`
	RateRatio   float64 `json:"rate_ratio_to_pgbench,omitempty"`
	P50Ratio    float64 `json:"p50_ratio_to_pgbench,omitempty"`
	P95Ratio    float64 `json:"p95_ratio_to_pgbench,omitempty"`
	P99Ratio    float64 `json:"p99_ratio_to_pgbench,omitempty"`
	BaseRatio   float64 `json:"rate_ratio_to_base,omitempty"`
}

func (h *HoldLevel) ratios() {
	if h.Ref != nil && h.HTTP != nil {
		h.RateRatio = ratio(h.HTTP.Rate, h.Ref.Rate)
		h.P50Ratio = ratio(h.HTTP.Latency.P50, h.Ref.Latency.P50)
		h.P95Ratio = ratio(h.HTTP.Latency.P95, h.Ref.Latency.P95)
		h.P99Ratio = ratio(h.HTTP.Latency.P99, h.Ref.Latency.P99)
	}
	if h.Base != nil && h.HTTP != nil {
		h.BaseRatio = ratio(h.HTTP.Rate, h.Base.Rate)
	}
	if h.Shared != nil && h.HTTP != nil {
		h.SharedRatio = ratio(h.HTTP.Rate, h.Shared.Rate)
	}
}

// warmEvent makes every server load the event into its hot cache (the
// first hold of an event would otherwise pay for it inside the window).
func (b *bench) warmEvent(ctx context.Context, servers []*server, event string) error {
	for _, s := range servers {
		code, body, err := s.call(ctx, b.fx.organizer, http.MethodGet, "/api/v1/events/"+event+"/occupancy", nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("warm event on %s: %d %s", s.name, code, body)
		}
	}
	return nil
}

// holdLoad runs buyers concurrently, each its own session, each hold on
// the next free seat, spread round-robin over servers. Requests run for
// warmup+dur; only answers arriving inside the last dur are counted.
// during, if set, runs (in its own goroutine) at the start of the window.
func (b *bench) holdLoad(ctx context.Context, servers []*server, buyers []*session, event string, seats []string,
	warmup, dur time.Duration, during func(context.Context)) *Load {
	var next atomic.Int64
	var ranOut atomic.Bool
	start := time.Now()
	winStart, winEnd := start.Add(warmup), start.Add(warmup+dur)
	type result struct {
		lat      []float64
		statuses map[int]int
		ok, bad  int
	}
	results := make([]result, len(buyers))
	var cpu0, cpu1 cpuSample
	var m0, m1 map[string]float64
	var wg sync.WaitGroup
	wg.Go(func() {
		sleepUntil(ctx, winStart)
		cpu0 = b.sampleCPU(servers)
		m0 = b.counters(ctx, servers)
		var side sync.WaitGroup
		if during != nil {
			side.Go(func() { during(ctx) })
		}
		sleepUntil(ctx, winEnd)
		cpu1 = b.sampleCPU(servers)
		m1 = b.counters(ctx, servers)
		side.Wait()
	})
	for i, buyer := range buyers {
		srv := servers[i%len(servers)]
		wg.Go(func() {
			r := result{statuses: map[int]int{}}
			path := "/api/v1/events/" + event + "/holds"
			for ctx.Err() == nil && time.Now().Before(winEnd) {
				k := int(next.Add(1) - 1)
				if k >= len(seats) {
					ranOut.Store(true)
					break
				}
				t0 := time.Now()
				code := srv.post(ctx, buyer, path, holdBody(seats[k]))
				t1 := time.Now()
				if t1.Before(winStart) || !t1.Before(winEnd) {
					continue
				}
				r.statuses[code]++
				if code == http.StatusCreated {
					r.ok++
					r.lat = append(r.lat, ms(t1.Sub(t0)))
				} else {
					r.bad++
				}
			}
			results[i] = r
		})
	}
	wg.Wait()
	l := &Load{Clients: len(buyers), Procs: len(servers), Seconds: dur.Seconds(), Statuses: map[string]int{},
		RanOut: ranOut.Load(), CPU: cpu0.to(cpu1), Counters: delta(m0, m1)}
	var lat []float64
	for _, r := range results {
		l.Holds += r.ok
		l.Failed += r.bad
		lat = append(lat, r.lat...)
		for code, n := range r.statuses {
			l.Statuses[statusName(code)] += n
		}
	}
	l.Latency = latencyOf(lat)
	if l.RanOut {
		l.Note = "ran out of seats: raise -event-seats"
	}
	l.finish()
	return l
}

// pacedLoad offers holds at a fixed total rate, spread evenly over the
// buyers (each buyer its own session and connection, one request at a
// time, like people clicking), instead of as fast as answers come back.
// Latency runs from each request's scheduled time, so a request that
// starts late because its buyer was still waiting counts its wait
// (no coordinated omission).
func (b *bench) pacedLoad(ctx context.Context, srv *server, buyers []*session, event string, seats []string,
	rate float64, warmup, dur time.Duration) *Load {
	var next atomic.Int64
	var ranOut atomic.Bool
	start := time.Now()
	winStart, winEnd := start.Add(warmup), start.Add(warmup+dur)
	period := time.Duration(float64(len(buyers)) / rate * float64(time.Second))
	results := make([][]float64, len(buyers))
	statuses := make([]map[int]int, len(buyers))
	var cpu0, cpu1 cpuSample
	var m0, m1 map[string]float64
	var wg sync.WaitGroup
	wg.Go(func() {
		sleepUntil(ctx, winStart)
		cpu0 = b.sampleCPU([]*server{srv})
		m0 = b.counters(ctx, []*server{srv})
		sleepUntil(ctx, winEnd)
		cpu1 = b.sampleCPU([]*server{srv})
		m1 = b.counters(ctx, []*server{srv})
	})
	path := "/api/v1/events/" + event + "/holds"
	for i, buyer := range buyers {
		wg.Go(func() {
			st := map[int]int{}
			at := start.Add(period * time.Duration(i) / time.Duration(len(buyers)))
			for ; ctx.Err() == nil && at.Before(winEnd); at = at.Add(period) {
				sleepUntil(ctx, at)
				k := int(next.Add(1) - 1)
				if k >= len(seats) {
					ranOut.Store(true)
					break
				}
				code := srv.post(ctx, buyer, path, holdBody(seats[k]))
				t1 := time.Now()
				if at.Before(winStart) {
					continue
				}
				st[code]++
				if code == http.StatusCreated {
					results[i] = append(results[i], ms(t1.Sub(at)))
				}
			}
			statuses[i] = st
		})
	}
	wg.Wait()
	l := &Load{Clients: len(buyers), Procs: 1, Seconds: dur.Seconds(), Statuses: map[string]int{},
		RanOut: ranOut.Load(), CPU: cpu0.to(cpu1), Offered: round3(rate), Counters: delta(m0, m1)}
	var lat []float64
	for i := range buyers {
		lat = append(lat, results[i]...)
		for code, n := range statuses[i] {
			l.Statuses[statusName(code)] += n
			if code != http.StatusCreated {
				l.Failed += n
			}
		}
	}
	l.Holds = len(lat)
	l.Latency = latencyOf(lat)
	l.finish()
	return l
}

// post sends a JSON POST and returns only the status (0 on a transport
// error); the body is drained so the connection is reused.
func (s *server) post(ctx context.Context, sess *session, path string, body []byte) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", sess.cookie)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func statusName(code int) string {
	if code == 0 {
		return "transport error"
	}
	return strconv.Itoa(code)
}

func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

// phaseHolds: distinct-seat holds through the HTTP API at each buyer
// count, each followed by pgbench doing the same hold transaction.
func (b *bench) phaseHolds(ctx context.Context) error {
	main, err := b.mainServer(ctx)
	if err != nil {
		return err
	}
	for _, c := range b.cfg.levels {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if c > len(b.fx.buyers) {
			return fmt.Errorf("%d buyers asked, %d created", c, len(b.fx.buyers))
		}
		ev, seats, err := b.genEvent(ctx, fmt.Sprintf("holds %d", c), b.cfg.eventSeats, false)
		if err != nil {
			return err
		}
		if err := b.warmEvent(ctx, []*server{main}, ev); err != nil {
			return err
		}
		var during func(context.Context)
		if b.cfg.profileLevel == c {
			during = b.profile(main, c)
		}
		lvl := &HoldLevel{Buyers: c}
		lvl.HTTP = b.holdLoad(ctx, []*server{main}, b.fx.buyers[:c], ev, seats, b.cfg.warmup, b.cfg.duration, during)
		b.log.printf("holds %4d buyers: %s", c, lvl.HTTP.summary())
		if b.cfg.noRef {
			b.rep.Holds = append(b.rep.Holds, lvl)
			continue
		}
		ref, err := b.pgbench(ctx, min(c, b.cfg.refMaxConns))
		if err != nil {
			b.log.printf("pgbench at %d clients: %v", c, err)
			b.rep.failed(fmt.Sprintf("pgbench %d", c), err)
		} else {
			lvl.Ref = ref
			b.log.printf("pgbench %3d clients: %s", ref.Clients, ref.summary())
		}
		if st, rows := lvl.HTTP.Counters["seatd_hold_batch_statements_total"], lvl.HTTP.Counters["seatd_hold_batch_rows_total"]; st > 0 {
			batch := max(1, int(math.Round(rows/st)))
			shared, err := b.pgbenchShared(ctx, b.batchSlots(), batch)
			if err != nil {
				b.log.printf("pgbench shared statement at %d buyers: %v", c, err)
				b.rep.failed(fmt.Sprintf("pgbench shared %d", c), err)
			} else {
				lvl.Shared = shared
				b.log.printf("pgbench shared statement, %d holds each, %d at once: %s", batch, shared.Clients, shared.summary())
			}
		}
		lvl.ratios()
		b.rep.Holds = append(b.rep.Holds, lvl)
	}
	return b.paced(ctx, main)
}

// batchSlots is how many hold statements seatd runs at once
// (SEATD_HOLD_BATCH_SLOTS, default 2).
func (b *bench) batchSlots() int {
	if n, err := strconv.Atoi(b.cfg.seatdEnv["SEATD_HOLD_BATCH_SLOTS"]); err == nil && n > 0 {
		return n
	}
	return 2
}

// paced measures hold latency at -paced-buyers under a steady offered
// load below saturation, next to pgbench throttled (-R) to the same rate
// with as many clients: the latency target is about people clicking, and
// a closed loop at full speed only measures queueing.
func (b *bench) paced(ctx context.Context, main *server) error {
	c, rate := b.cfg.pacedBuyers, b.cfg.pacedRate
	if c == 0 || ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if rate <= 0 {
		// People, not a saturated loop: two clicks a second per buyer, but
		// never more than half of what the closed loop reached.
		fast, _ := b.levelResults(c)
		if fast == nil || fast.Rate <= 0 {
			return nil
		}
		rate = min(2*float64(c), fast.Rate/2)
	}
	ev, seats, err := b.genEvent(ctx, fmt.Sprintf("paced %d", c), b.cfg.eventSeats, false)
	if err != nil {
		return err
	}
	if err := b.warmEvent(ctx, []*server{main}, ev); err != nil {
		return err
	}
	lvl := &HoldLevel{Buyers: c}
	lvl.HTTP = b.pacedLoad(ctx, main, b.fx.buyers[:c], ev, seats, rate, b.cfg.warmup, b.cfg.duration)
	b.log.printf("paced %.0f holds/s over %d buyers: %s", rate, c, lvl.HTTP.summary())
	if b.cfg.noRef {
		b.rep.Paced = lvl
		return nil
	}
	ref, err := b.pgbenchRate(ctx, min(c, b.cfg.refMaxConns), rate)
	if err != nil {
		b.rep.failed("pgbench paced", err)
	} else {
		lvl.Ref = ref
		b.log.printf("pgbench -R %.0f -c %d: %s", rate, ref.Clients, ref.summary())
	}
	lvl.ratios()
	b.rep.Paced = lvl
	return nil
}

func (l *Load) summary() string {
	s := fmt.Sprintf("%.0f holds/s, p50 %.1f p95 %.1f p99 %.1f ms, %d failed", l.Rate, l.Latency.P50,
		l.Latency.P95, l.Latency.P99, l.Failed)
	if l.Holds > 0 {
		s += fmt.Sprintf("; CPU µs/hold seatd %.0f pg %.0f redis %.0f client %.0f", l.CPUPerHold.Seatd,
			l.CPUPerHold.Postgres, l.CPUPerHold.Redis, l.CPUPerHold.Client)
	}
	if r := l.roundTrips(); r != "" {
		s += "; " + r
	}
	if o := l.CPU.otherShare(); o >= 0.05 {
		s += fmt.Sprintf("; other processes used %.0f%% of the machine", o*100)
	}
	if l.Note != "" {
		s += " (" + l.Note + ")"
	}
	return s
}

// roundTrips describes the Postgres statements per hold the server
// counters show: coalesced hold statements and session-store reads.
func (l *Load) roundTrips() string {
	var parts []string
	if st, rows := l.Counters["seatd_hold_batch_statements_total"], l.Counters["seatd_hold_batch_rows_total"]; st > 0 {
		parts = append(parts, fmt.Sprintf("%.1f holds per hold statement", rows/st))
	}
	if r, ok := l.Counters["seatd_session_store_reads_total"]; ok && l.Holds > 0 {
		parts = append(parts, fmt.Sprintf("%.3f session reads per hold", r/float64(l.Holds)))
	}
	return strings.Join(parts, ", ")
}

// otherShare is the fraction of the machine's CPU that processes outside
// the bench used during the window.
func (c CPU) otherShare() float64 {
	total := c.Seatd + c.Postgres + c.Redis + c.Client + c.Other + c.Idle
	if total <= 0 {
		return 0
	}
	return c.Other / total
}

// mainServer returns the main seatd process, starting it again if a
// phase stopped it.
func (b *bench) mainServer(ctx context.Context) (*server, error) {
	b.mu.Lock()
	for _, s := range b.servers {
		if s.name == "main" {
			b.mu.Unlock()
			return s, nil
		}
	}
	b.mu.Unlock()
	return b.startServer(ctx, "main", nil)
}

// stopNamed stops the running servers with these names.
func (b *bench) stopNamed(names ...string) {
	b.mu.Lock()
	var stop []*server
	for _, s := range b.servers {
		if contains(names, s.name) {
			stop = append(stop, s)
		}
	}
	b.mu.Unlock()
	for _, s := range stop {
		b.stopServer(s)
	}
}

// profile returns a function fetching a CPU profile of s from its pprof
// listener into the results directory.
func (b *bench) profile(s *server, buyers int) func(context.Context) {
	return func(ctx context.Context) {
		secs := int(min(b.cfg.profileFor, b.cfg.duration).Seconds())
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", s.ops, max(secs, 1))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		resp, err := s.http.Do(req)
		if err != nil {
			b.log.printf("cpu profile: %v", err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.log.printf("cpu profile: %s", resp.Status)
			return
		}
		if err := os.MkdirAll(b.cfg.outDir, 0o755); err != nil {
			return
		}
		path := filepath.Join(b.cfg.outDir, fmt.Sprintf("%s-cpu-%d.pprof", b.rep.Started.Format("20060102T150405Z"), buyers))
		f, err := os.Create(path)
		if err != nil {
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil && cerr == nil {
			b.rep.Profiles = append(b.rep.Profiles, path)
			b.log.printf("cpu profile of seatd at %d buyers: %s", buyers, path)
		}
	}
}
