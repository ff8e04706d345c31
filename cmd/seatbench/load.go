package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
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
	// Slowest are the window's slowest granted holds (closed loops): when
	// each began and how long it took, to find them in a trace or a log.
	Slowest []Slow `json:"slowest,omitempty"`
}

// Slow is one slow request: when it was sent and how long it took.
type Slow struct {
	At time.Time `json:"at"`
	MS float64   `json:"ms"`
}

// slowestKept is how many of a window's slowest holds a Load keeps.
const slowestKept = 10

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

// counters sums the windowCounters over the servers.
func counters(ctx context.Context, servers []*server) map[string]float64 {
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

// loadgen sends the buyers' holds of a measurement to seatd servers, in
// a closed loop or paced at a fixed rate, and takes the CPU and server
// counters of the measured window. warm readies the servers first.
type loadgen struct {
	procs     *procs   // CPU samples of the servers and the services
	organizer *session // warms events
}

// warm makes every server load the event into its hot cache (the first
// hold of an event would otherwise pay for it inside the window).
func (g *loadgen) warm(ctx context.Context, servers []*server, event string) error {
	for _, s := range servers {
		code, body, err := s.call(ctx, g.organizer, http.MethodGet, "/api/v1/events/"+event+"/occupancy", nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("warm event on %s: %d %s", s.name, code, body)
		}
	}
	return nil
}

// closedLoop runs buyers concurrently, each its own session, each hold on
// the next free seat, spread round-robin over servers. Requests run for
// warmup+dur; only answers arriving inside the last dur are counted.
// during, if set, runs (in its own goroutine) at the start of the window.
func (g *loadgen) closedLoop(ctx context.Context, servers []*server, buyers []*session, event string, seats []string,
	warmup, dur time.Duration, during func(context.Context)) *Load {
	start := time.Now()
	winStart, winEnd := start.Add(warmup), start.Add(warmup+dur)
	type result struct {
		lat      []float64
		slow     []Slow // a buyer's slowest, at most slowestKept
		statuses map[int]int
		ok, bad  int
	}
	results := make([]result, len(buyers))
	var cpu0, cpu1 cpuSample
	var m0, m1 map[string]float64
	var wg sync.WaitGroup
	wg.Go(func() {
		sleepUntil(ctx, winStart)
		cpu0 = g.procs.sampleCPU(servers)
		m0 = counters(ctx, servers)
		var side sync.WaitGroup
		if during != nil {
			side.Go(func() { during(ctx) })
		}
		sleepUntil(ctx, winEnd)
		cpu1 = g.procs.sampleCPU(servers)
		m1 = counters(ctx, servers)
		side.Wait()
	})
	path := "/api/v1/events/" + event + "/holds"
	for i := range results {
		results[i].statuses = map[int]int{}
	}
	ranOut, _ := loop(ctx, len(buyers), len(seats), winEnd, func(i, k int) error {
		r := &results[i]
		t0 := time.Now()
		code := servers[i%len(servers)].post(ctx, buyers[i], path, holdBody(seats[k]))
		t1 := time.Now()
		if t1.Before(winStart) || !t1.Before(winEnd) {
			return nil
		}
		r.statuses[code]++
		if code == http.StatusCreated {
			r.ok++
			r.lat = append(r.lat, ms(t1.Sub(t0)))
			r.slow = keepSlowest(r.slow, Slow{At: t0, MS: ms(t1.Sub(t0))})
		} else {
			r.bad++
		}
		return nil
	})
	wg.Wait()
	l := &Load{Clients: len(buyers), Procs: len(servers), Seconds: dur.Seconds(), Statuses: map[string]int{},
		RanOut: ranOut, CPU: cpu0.to(cpu1), Counters: delta(m0, m1)}
	var lat []float64
	for _, r := range results {
		l.Holds += r.ok
		l.Failed += r.bad
		lat = append(lat, r.lat...)
		for _, sl := range r.slow {
			l.Slowest = keepSlowest(l.Slowest, sl)
		}
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

// paced offers holds at a fixed total rate, spread evenly over the
// buyers (each buyer its own session and connection, one request at a
// time, like people clicking), instead of as fast as answers come back.
// Latency runs from each request's scheduled time, so a request that
// starts late because its buyer was still waiting counts its wait
// (no coordinated omission).
func (g *loadgen) paced(ctx context.Context, srv *server, buyers []*session, event string, seats []string,
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
		cpu0 = g.procs.sampleCPU([]*server{srv})
		m0 = counters(ctx, []*server{srv})
		sleepUntil(ctx, winEnd)
		cpu1 = g.procs.sampleCPU([]*server{srv})
		m1 = counters(ctx, []*server{srv})
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

// keepSlowest adds x to the slowest requests kept (slowest first), at
// most slowestKept of them.
func keepSlowest(kept []Slow, x Slow) []Slow {
	if len(kept) == slowestKept && x.MS <= kept[len(kept)-1].MS {
		return kept
	}
	i := sort.Search(len(kept), func(i int) bool { return kept[i].MS < x.MS })
	kept = slices.Insert(kept, i, x)
	if len(kept) > slowestKept {
		kept = kept[:slowestKept]
	}
	return kept
}
