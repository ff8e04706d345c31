package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

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
	// SharedCharged is the shared statement's rate with the CPU that
	// Redis and the load generator spent per hold in seatd's run charged
	// to it: the same cores doing the same work per hold
	// (chargedRate); CeilingRatio is seatd's rate against it.
	SharedCharged float64 `json:"pgbench_shared_charged_per_s,omitempty"`
	CeilingRatio  float64 `json:"rate_ratio_to_shared_charged,omitempty"`
	RateRatio     float64 `json:"rate_ratio_to_pgbench,omitempty"`
	P50Ratio      float64 `json:"p50_ratio_to_pgbench,omitempty"`
	P95Ratio      float64 `json:"p95_ratio_to_pgbench,omitempty"`
	P99Ratio      float64 `json:"p99_ratio_to_pgbench,omitempty"`
	BaseRatio     float64 `json:"rate_ratio_to_base,omitempty"`
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
		h.SharedCharged = round3(chargedRate(h.Shared, h.HTTP))
		h.CeilingRatio = ratio(h.HTTP.Rate, h.SharedCharged)
	}
}

// chargedRate is ref's holds/s had each of its holds also cost the CPU
// that Redis and the load generator spent per hold in run: ref's CPU per
// hold (Postgres and pgbench) c, the charge x, ref.Rate × c / (c + x).
// The cores that gave ref its rate at c a hold give that many fewer at
// c + x. Zero when either run has no CPU figures.
func chargedRate(ref, run *Load) float64 {
	c := ref.CPUPerHold.Postgres + ref.CPUPerHold.Client
	x := run.CPUPerHold.Redis + run.CPUPerHold.Client
	if c <= 0 || x <= 0 {
		return 0
	}
	return ref.Rate * c / (c + x)
}

// phaseHolds: distinct-seat holds through the HTTP API at each buyer
// count, each followed by pgbench doing the same hold transaction.
func (b *bench) phaseHolds(ctx context.Context) error {
	main, err := b.procs.mainServer(ctx)
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
		ev, seats, err := b.fx.newEvent(ctx, fmt.Sprintf("holds %d", c), b.cfg.eventSeats, false)
		if err != nil {
			return err
		}
		if err := b.load.warm(ctx, []*server{main}, ev); err != nil {
			return err
		}
		var during func(context.Context)
		if b.cfg.profileLevel == c {
			during = b.profileNamed(main, fmt.Sprintf("%d", c), min(b.cfg.profileFor, b.cfg.duration))
		}
		lvl := &HoldLevel{Buyers: c}
		lvl.HTTP = b.load.closedLoop(ctx, []*server{main}, b.fx.buyers[:c], ev, seats, b.cfg.warmup, b.cfg.duration, during)
		b.log.printf("holds %4d buyers: %s", c, lvl.HTTP.summary())
		if b.cfg.noRef {
			b.rep.Holds = append(b.rep.Holds, lvl)
			continue
		}
		ref, err := b.pgbench.holds(ctx, min(c, b.cfg.refMaxConns))
		if err != nil {
			b.log.printf("pgbench at %d clients: %v", c, err)
			b.rep.failed(fmt.Sprintf("pgbench %d", c), err)
		} else {
			lvl.Ref = ref
			b.log.printf("pgbench %3d clients: %s", ref.Clients, ref.summary())
		}
		if st, rows := lvl.HTTP.Counters["seatd_hold_batch_statements_total"], lvl.HTTP.Counters["seatd_hold_batch_rows_total"]; st > 0 {
			batch := max(1, int(math.Round(rows/st)))
			shared, err := b.pgbench.shared(ctx, b.cfg.batchSlots(), batch)
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
		fast, _ := b.rep.holdsAt(c)
		if fast == nil || fast.Rate <= 0 {
			return nil
		}
		rate = min(2*float64(c), fast.Rate/2)
	}
	ev, seats, err := b.fx.newEvent(ctx, fmt.Sprintf("paced %d", c), b.cfg.eventSeats, false)
	if err != nil {
		return err
	}
	if err := b.load.warm(ctx, []*server{main}, ev); err != nil {
		return err
	}
	lvl := &HoldLevel{Buyers: c}
	lvl.HTTP = b.load.paced(ctx, main, b.fx.buyers[:c], ev, seats, rate, b.cfg.warmup, b.cfg.duration)
	b.log.printf("paced %.0f holds/s over %d buyers: %s", rate, c, lvl.HTTP.summary())
	if b.cfg.noRef {
		b.rep.Paced = lvl
		return nil
	}
	ref, err := b.pgbench.paced(ctx, min(c, b.cfg.refMaxConns), rate)
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

// profileNamed returns a function fetching a CPU profile of s for d from
// its pprof listener into the results directory, in a file named with
// label.
func (b *bench) profileNamed(s *server, label string, d time.Duration) func(context.Context) {
	return func(ctx context.Context) {
		secs := int(d.Seconds())
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
		path := filepath.Join(b.cfg.outDir, fmt.Sprintf("%s-cpu-%s.pprof", b.rep.Started.Format("20060102T150405Z"), label))
		f, err := os.Create(path)
		if err != nil {
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil && cerr == nil {
			b.rep.Profiles = append(b.rep.Profiles, path)
			b.log.printf("cpu profile of seatd (%s): %s", label, path)
		}
	}
}
