package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// perfDocCommand renders docs/performance.md: the hand-written template
// (how to reproduce, what each figure means) around one table of the
// targets in docs/performance.md's order, every figure read from one
// result file. `make perf-doc` runs it; TestPerformanceDocCurrent checks
// that the committed file is what it renders.
func perfDocCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seatbench perf-doc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	results := fs.String("results", "bench/results/latest.json", "result file the figures come from")
	tmpl := fs.String("template", "bench/performance.md.tmpl", "hand-written text around the table")
	out := fs.String("out", "docs/performance.md", "file to write (- for standard output)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	doc, err := renderPerfDoc(*results, *tmpl)
	if err != nil {
		return err
	}
	if *out == "-" {
		_, err = stdout.Write(doc)
		return err
	}
	return os.WriteFile(*out, doc, 0o644)
}

// renderPerfDoc is docs/performance.md as the template tmpl renders it
// from the result file results (paths from the repository's root).
func renderPerfDoc(results, tmpl string) ([]byte, error) {
	r, err := readReport(results)
	if err != nil {
		return nil, err
	}
	text, err := os.ReadFile(tmpl)
	if err != nil {
		return nil, err
	}
	t, err := template.New(tmpl).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = t.Execute(&buf, perfDoc{
		R: r, Results: results, Template: tmpl,
		Date: r.Started.Format(time.DateOnly), Minutes: r.Seconds / 60,
		Machine: machineLine(r.Machine), Table: perfTable(r),
	})
	return buf.Bytes(), err
}

// perfDoc is what the template sees.
type perfDoc struct {
	R        *Report
	Results  string // the result file
	Template string // the template itself, for the generated-file notice
	Date     string // the run's start, UTC
	Minutes  float64
	Machine  string
	Table    string
}

func machineLine(m Machine) string {
	return fmt.Sprintf("%d CPUs (%s), %.1f GiB RAM, Linux %s, %s, %s (fsync=%s, synchronous_commit=%s, shared_buffers=%s), %s",
		m.CPUs, m.CPUModel, float64(m.MemoryMiB)/1024, m.Kernel, m.GoVersion, m.Postgres,
		m.PostgresConf["fsync"], m.PostgresConf["synchronous_commit"], m.PostgresConf["shared_buffers"], m.Redis)
}

// perfRow is one line of the table. Reference is what the figure is
// measured against in the same run; Ratio is set where the target is one.
// Ran says the row's phase ran in this run.
type perfRow struct {
	What, Target, Figure, Reference, Ratio, Verdict string
	Ran                                             bool
}

const (
	met         = "met"
	notMet      = "**not met**"
	notMeasured = "not measured"
)

func verdict(ok bool) string {
	if ok {
		return met
	}
	return notMet
}

// perfRows is every target, in the order docs/performance.md explains
// them, judged on r. A row whose phase did not run, or whose reference
// the bench does not take yet, says "not measured".
func perfRows(r *Report) []perfRow {
	var rows []perfRow
	add := func(what, target, fig, ref, ratio, v string) {
		rows = append(rows, perfRow{What: what, Target: target, Figure: fig, Reference: ref, Ratio: ratio, Verdict: v, Ran: true})
	}
	missing := func(what, target, why string) {
		rows = append(rows, perfRow{What: what, Target: target, Figure: why, Verdict: notMeasured})
	}

	// Distinct-seat holds against pgbench, one hold per transaction.
	measured := false
	for _, h := range r.Holds {
		if h.HTTP == nil || h.Ref == nil {
			continue
		}
		measured = true
		v := verdict(h.RateRatio >= 0.5)
		if h.RateRatio >= 1 {
			v = "met, stretch met"
		}
		add(fmt.Sprintf("distinct-seat holds, %d buyers", h.Buyers), "≥ 0.50 × pgbench (stretch ≥ 1.00)",
			fmt.Sprintf("%s holds/s", num(h.HTTP.Rate)),
			fmt.Sprintf("pgbench -c %d, one hold a transaction: %s holds/s", h.Ref.Clients, num(h.Ref.Rate)),
			fmt.Sprintf("%.2f", h.RateRatio), v)
	}
	if !measured {
		missing("distinct-seat holds", "≥ 0.50 × pgbench (stretch ≥ 1.00)", "holds phase not run")
	}

	// Latency under 200 clients: paced (people clicking), then saturated.
	if h := r.Paced; h != nil && h.HTTP != nil {
		ref := "–"
		if h.Ref != nil {
			ref = fmt.Sprintf("pgbench -R at the same rate: p95 %.1f, p99 %.1f ms", h.Ref.Latency.P95, h.Ref.Latency.P99)
		}
		l := h.HTTP.Latency
		add(fmt.Sprintf("hold latency, %d buyers paced at %s holds/s", h.Buyers, num(h.HTTP.Offered)), "p95 < 25 ms, p99 < 50 ms",
			fmt.Sprintf("p95 %.1f, p99 %.1f ms", l.P95, l.P99), ref, "", verdict(l.P95 < 25 && l.P99 < 50 && h.HTTP.Failed == 0))
	} else {
		missing("hold latency, 200 buyers paced", "p95 < 25 ms, p99 < 50 ms", "paced run not run")
	}
	for _, h := range r.Holds {
		if h.Buyers != 200 || h.HTTP == nil {
			continue
		}
		ref := "–"
		if h.Ref != nil {
			ref = fmt.Sprintf("pgbench -c %d: p95 %.1f, p99 %.1f ms", h.Ref.Clients, h.Ref.Latency.P95, h.Ref.Latency.P99)
		}
		l := h.HTTP.Latency
		add("hold latency, 200 buyers, closed loop (saturated)", "p95 < 25 ms, p99 < 50 ms",
			fmt.Sprintf("p95 %.1f, p99 %.1f ms at %s holds/s", l.P95, l.P99, num(h.HTTP.Rate)), ref, "", verdict(l.P95 < 25 && l.P99 < 50))
	}

	if h := r.HotSeat; h != nil {
		add(fmt.Sprintf("%s buyers, one seat", num(float64(h.Buyers))), "exactly 1 hold; refusals write nothing; all < 1 s",
			fmt.Sprintf("%d granted, %d refused, %d other; %d Postgres writes by refusals; slowest %.0f ms", h.Granted, h.Refused, h.Other, h.RefusalPGWrites, h.MaxMS),
			fmt.Sprintf("refused by the hot cache %d, Redis %d, Postgres %d", h.ByTier["hot"], h.ByTier["redis"], h.ByTier["postgres"]), "",
			verdict(h.Granted == 1 && h.Refused == h.Buyers-1 && h.RefusalPGWrites == 0 && h.MaxMS < 1000 && h.WallMS < 1000))
	} else {
		missing("1 000 buyers, one seat", "exactly 1 hold; refusals write nothing; all < 1 s", "hotseat phase not run")
	}

	if l := r.Live; l != nil && l.Connected > 0 {
		fig := fmt.Sprintf("p99 %.1f ms, %d of %s frames missed", l.Latency.P99, l.Missed, num(float64(l.Expected)))
		ref := fmt.Sprintf("the hold's own answer: p99 %.1f ms", l.HoldAnswer.P99)
		add(fmt.Sprintf("live update to %s WebSocket clients of one process", num(float64(l.Connected))), "p99 < 100 ms, none missed",
			fig, ref, "", verdict(l.Latency.P99 < 100 && l.Missed == 0))
	} else {
		missing("live update to 5 000 WebSocket clients", "p99 < 100 ms", "live phase not run")
	}

	if e := r.Expiry; e != nil && e.Latency.N > 0 {
		add("expired hold shown available on an open map", "< 2 s after held_until",
			fmt.Sprintf("max %.0f ms (p50 %.0f), %d missed", e.Latency.Max, e.Latency.P50, e.Missed),
			"the reaper runs every "+e.ReaperInterval, "", verdict(e.Latency.Max < 2000 && e.Missed == 0))
	} else {
		missing("expired hold shown available", "< 2 s after held_until", "expiry phase not run")
	}

	if o := r.Occupancy; o != nil {
		add(fmt.Sprintf("occupancy of a %s-seat event, served", num(float64(o.Seats))), "< 20 ms",
			fmt.Sprintf("p99 %.2f ms", o.Served.P99), fmt.Sprintf("recomputed in SQL: p99 %.1f ms", o.Recomputed.P99),
			fmt.Sprintf("%.3f", ratio2(o.Served.P99, o.Recomputed.P99)), verdict(o.Served.P99 < 20))
		add(fmt.Sprintf("occupancy of a %s-seat event, recomputed", num(float64(o.Seats))), "< 200 ms",
			fmt.Sprintf("p99 %.1f ms (vacuumed)", o.Recomputed.P99), fmt.Sprintf("right after the bulk insert: p99 %.1f ms", o.RecomputedFresh.P99),
			"", verdict(o.Recomputed.P99 < 200))
	} else {
		missing("occupancy of a 100 000-seat event", "< 20 ms served, < 200 ms recomputed", "occupancy phase not run")
	}

	if l := r.Live; l != nil && l.Connected > 0 {
		add("memory per idle WebSocket client", "< 32 KiB",
			fmt.Sprintf("%.1f KiB RSS", l.RSSPerClientKiB), fmt.Sprintf("heap %.1f + stacks %.1f KiB", l.HeapPerClientKiB, l.StackPerClientKiB),
			"", verdict(l.RSSPerClientKiB < 32))
	} else {
		missing("memory per idle WebSocket client", "< 32 KiB", "live phase not run")
	}

	measured = false
	for _, h := range r.Fallback {
		if h.HTTP == nil {
			continue
		}
		measured = true
		ref, ratio := "–", ""
		if h.Base != nil {
			ref = fmt.Sprintf("fast path, same buyers: %s holds/s", num(h.Base.Rate))
			ratio = fmt.Sprintf("%.2f", ratio2(h.HTTP.Rate, h.Base.Rate))
		}
		add(fmt.Sprintf("Redis down, %d buyers: holds keep succeeding", h.Buyers), "holds succeed through Postgres",
			fmt.Sprintf("%s holds/s, %d failed", num(h.HTTP.Rate), h.HTTP.Failed), ref, ratio, verdict(h.HTTP.Failed == 0 && h.HTTP.Holds > 0))
	}
	if !measured {
		missing("Redis down: holds keep succeeding", "holds succeed through Postgres", "fallback phase not run")
	}

	// The targets stated as ratios.
	for _, h := range r.Holds {
		if h.Buyers != 200 || h.HTTP == nil {
			continue
		}
		c := h.HTTP.CPUPerHold
		add("seatd CPU per granted hold, 200 buyers", "≤ 1.0 × Postgres's, same phase",
			fmt.Sprintf("seatd %.0f µs", c.Seatd), fmt.Sprintf("Postgres %.0f µs (Redis %.0f, load generator %.0f)", c.Postgres, c.Redis, c.Client),
			fmt.Sprintf("%.2f", ratio2(c.Seatd, c.Postgres)), verdict(c.Postgres > 0 && c.Seatd <= c.Postgres))
	}
	for _, h := range r.Holds {
		if h.HTTP == nil || h.Shared == nil {
			continue
		}
		what, target := fmt.Sprintf("the true ceiling, %d buyers", h.Buyers), "≥ 0.70 × the shared statement in pgbench, Redis and load generator charged to it"
		if h.SharedCharged <= 0 {
			add(what, target, fmt.Sprintf("%s holds/s", num(h.HTTP.Rate)), fmt.Sprintf("pgbench, shared statement (%s): %s holds/s, no CPU figures to charge", h.Shared.Note, num(h.Shared.Rate)),
				fmt.Sprintf("%.2f", h.SharedRatio), notMeasured)
			continue
		}
		x := h.HTTP.CPUPerHold
		add(what, target, fmt.Sprintf("%s holds/s", num(h.HTTP.Rate)),
			fmt.Sprintf("pgbench, shared statement (%s): %s holds/s, %s charged with Redis %.0f + load generator %.0f µs/hold", h.Shared.Note,
				num(h.Shared.Rate), num(h.SharedCharged), x.Redis, x.Client),
			fmt.Sprintf("%.2f", h.CeilingRatio), verdict(h.CeilingRatio >= 0.7))
	}
	if o := r.Opening; o != nil && o.Steady != nil {
		const target = "p99 ≤ 3 × GET /api/v1/me's p99 at the same concurrency"
		what, fig := fmt.Sprintf("steady holds, %d open connections", o.Buyers), fmt.Sprintf("p99 %.1f ms at %s holds/s", o.Steady.Latency.P99, num(o.Steady.Rate))
		if me := o.SteadyMe; me != nil && me.N > 0 {
			add(what, target, fig, fmt.Sprintf("GET /api/v1/me, %d connections: p99 %.1f ms at %s/s", o.Buyers, me.P99, num(o.SteadyMePerSec)),
				fmt.Sprintf("%.2f", ratio2(o.Steady.Latency.P99, me.P99)), verdict(o.Steady.Latency.P99 <= 3*me.P99))
		} else {
			add(what, target, fig, "GET /api/v1/me at the same concurrency: not taken", "", notMeasured)
		}
	} else {
		missing("steady holds, 32 open connections", "p99 ≤ 3 × GET /api/v1/me's p99", "opening phase not run")
	}
	if x := r.Best; x != nil {
		clean := x.SeatsTwice == 0 && x.NotTogether == 0 && x.Orphans == 0 && x.Other == 0
		fig := fmt.Sprintf("median burst of %d: p99 %.1f ms; %d seats twice, %d blocks apart, %d orphans", len(x.Bursts), x.Latency.P99, x.SeatsTwice, x.NotTogether, x.Orphans)
		if x.WritesMS > 0 {
			add(fmt.Sprintf("best available, %d concurrent 4-seat requests", x.Buyers), "no seat twice, blocks side by side; p99 ≤ 2 × Postgres alone writing the burst",
				fig, fmt.Sprintf("Postgres alone writes the burst: %.1f ms", x.WritesMS), fmt.Sprintf("%.2f", ratio2(x.Latency.P99, x.WritesMS)),
				verdict(clean && x.Latency.P99 <= 2*x.WritesMS))
		} else {
			add(fmt.Sprintf("best available, %d concurrent 4-seat requests", x.Buyers), "no seat twice, blocks side by side; p99 ≤ 2 × Postgres alone writing the burst",
				fig, "Postgres alone: not taken (-no-ref)", "", notMeasured)
		}
	} else {
		missing("best available, 500 concurrent 4-seat requests", "p99 ≤ 2 × Postgres alone writing the burst", "best phase not run")
	}
	measured = false
	for _, h := range r.Multi {
		if !h.Balanced || h.HTTP == nil || h.Base == nil {
			continue
		}
		measured = true
		x := ratio2(h.HTTP.CPUPerHold.Seatd, h.Base.CPUPerHold.Seatd)
		add(fmt.Sprintf("%d processes behind haproxy, CPU per hold", h.HTTP.Procs), "≤ 1.5 × one process's",
			fmt.Sprintf("seatd %.0f µs (haproxy %.0f)", h.HTTP.CPUPerHold.Seatd, h.HTTP.CPUPerHold.Balancer),
			fmt.Sprintf("one process: seatd %.0f µs", h.Base.CPUPerHold.Seatd), fmt.Sprintf("%.2f", x), verdict(x > 0 && x <= 1.5))
	}
	if !measured {
		missing("3 processes behind haproxy, CPU per hold", "≤ 1.5 × one process's", "multi phase not run")
	}
	if l := r.Live; l != nil && l.Connected > 0 {
		perCore := "–"
		if l.ServerCPUPerFrameUS > 0 {
			perCore = fmt.Sprintf("%s frames/s per core (%.1f µs of seatd CPU a frame)", num(1e6/l.ServerCPUPerFrameUS), l.ServerCPUPerFrameUS)
		}
		add(fmt.Sprintf("live update to %s sockets of one process", num(float64(l.Connected))), "p99 < 150 ms; frames per second per core beside it",
			fmt.Sprintf("p99 %.1f ms", l.Latency.P99), perCore, "", verdict(l.Latency.P99 < 150 && l.Missed == 0))
		if f := l.Flash; f != nil && f.Holds > 0 {
			tick, err := time.ParseDuration(f.Tick)
			perTick := err == nil && tick > 0 && f.FramesPerSocket <= float64(time.Second)/float64(tick)
			add(fmt.Sprintf("live at a sale's pace: %d holds/s to %s sockets of one process", f.Rate, num(float64(l.Connected))),
				"every socket keeps up (none dropped, none missed); at most one frame a socket a tick ("+f.Tick+")",
				fmt.Sprintf("%.1f frames a socket a second, %.1f changes a frame; %d dropped, %d missed", f.FramesPerSocket, f.ChangesPerFrame, f.Dropped, f.Missed),
				fmt.Sprintf("hold → frame p50 %.0f, p99 %.0f ms (sampled); seatd %.2f µs a change delivered", f.Latency.P50, f.Latency.P99, f.ServerCPUPerChangeUS),
				"", verdict(perTick && f.Dropped == 0 && f.Missed == 0 && f.Failed == 0))
		} else {
			missing("live at a sale's pace", "every socket keeps up; at most one frame a socket a tick",
				"the flash run needs 1 000 holds or more (-ws-flash × -ws-flash-rate)")
		}
	}
	if la := r.LiveAcross; la != nil && la.Latency.N > 0 {
		add(fmt.Sprintf("live update through haproxy, %s sockets over %d processes", num(float64(la.Sockets)), la.Procs), "p99 < 100 ms",
			fmt.Sprintf("p99 %.1f ms, %d of %s frames missed", la.Latency.P99, la.Missed, num(float64(la.Expected))), "", "",
			verdict(la.Latency.P99 < 100 && la.Missed == 0))
	}
	if m := r.BigMap; m != nil {
		name := fmt.Sprintf("a %s-seat map in Chromium", num(float64(m.Seats)))
		add(name+": first usable map", "< 1.5 s", fmt.Sprintf("%.0f ms", m.UsableMS),
			fmt.Sprintf("CSS and scripts cached: %.0f ms", m.UsableWarmMS), "", verdict(m.UsableMS < 1500))
		add(name+": bytes until live", "< 1.5 MB", fmt.Sprintf("%.2f MB in %d requests", float64(m.Bytes)/1e6, m.Requests),
			fmt.Sprintf("the page alone: %.0f KB (%.0f KB decoded)", float64(m.PageBytes)/1e3, float64(m.PageRawBytes)/1e3), "", verdict(m.Bytes < 1_500_000))
		add(name+": one live frame applied", "< 16 ms", fmt.Sprintf("max %.2f ms of %d frames", m.FrameApply.Max, m.Frames),
			fmt.Sprintf("with a forced layout: max %.2f ms", m.FrameLayout.Max), "", verdict(m.Frames > 0 && m.FrameApply.Max < 16))
		add(name+": JS heap", "< 100 MB", fmt.Sprintf("%.1f MB", m.HeapUsedMB), fmt.Sprintf("after a GC: %.1f MB", m.HeapAfterGCMB), "", verdict(m.HeapUsedMB < 100))
		add(name+": the whole venue at first sight", "every section in the window", fmt.Sprintf("%d of %d sections", m.SectionsInView, m.Sections), "", "",
			verdict(m.SectionsInView == m.Sections))
	} else {
		missing("a 100 000-seat map in Chromium", "usable < 1.5 s, < 1.5 MB, frame < 16 ms, heap < 100 MB", "bigmap phase not run")
	}
	if c := r.Charts; c != nil && len(c.JSONMS) > 0 && len(c.CSVMS) > 0 {
		worst := max(slices.Max(c.JSONMS), slices.Max(c.CSVMS))
		add(fmt.Sprintf("chart import, %s seats", num(float64(c.Seats))), "< 5 s", fmt.Sprintf("slowest of %d: %.0f ms", len(c.JSONMS)+len(c.CSVMS), worst),
			fmt.Sprintf("JSON %.1f MB, CSV %.1f MB", float64(c.JSONBytes)/1e6, float64(c.CSVBytes)/1e6), "", verdict(worst < 5000))
	} else {
		missing("chart import, 100 000 seats", "< 5 s", "charts phase not run")
	}
	if wh := r.Webhooks; wh != nil {
		add(fmt.Sprintf("webhooks, commit → delivery at %s changes/s", num(wh.Offered)), "p99 < 1 s",
			fmt.Sprintf("p99 %.0f ms", wh.Latency.P99), fmt.Sprintf("%s changes/s achieved", num(wh.Achieved)), "",
			verdict(wh.Latency.P99 < 1000 && wh.Achieved >= 0.9*wh.Offered))
		add(fmt.Sprintf("webhooks, receiver down %.0f s, then back", wh.OutageSeconds), "none lost, in order per seat",
			fmt.Sprintf("%s of %s delivered, %d seats out of order", num(float64(wh.Delivered)), num(float64(wh.Expected)), wh.Reordered),
			fmt.Sprintf("drained %.1f s after its return", wh.DrainSeconds), "", verdict(wh.Lost == 0 && wh.Reordered == 0))
	} else {
		missing("webhooks", "p99 < 1 s at 1 000 changes/s; none lost", "webhooks phase not run")
	}
	if wl := r.Waitlist; wl != nil && wl.Latency.N > 0 {
		add("freed seat → offer in the next waiting buyer's cart", "< 2 s",
			fmt.Sprintf("max %.0f ms (p50 %.0f), %d missed", wl.Latency.Max, wl.Latency.P50, wl.Missed), "", "", verdict(wl.Latency.Max < 2000 && wl.Missed == 0))
	} else {
		missing("freed seat → waitlist offer", "< 2 s", "waitlist phase not run")
	}

	if d := r.Door; d != nil {
		add(fmt.Sprintf("door check-ins, %d scanners, each ticket once", d.Scanners), "p99 ≤ 3 × GET /api/v1/me's p99",
			fmt.Sprintf("p99 %.1f ms, %s scans/s, %d refused", d.Scan.P99, num(d.PerSec), d.Refused),
			fmt.Sprintf("GET /api/v1/me p99 %.1f ms, %s/s", d.Ref.P99, num(d.RefPerSec)),
			fmt.Sprintf("%.2f", ratio2(d.Scan.P99, d.Ref.P99)), verdict(d.Refused == 0 && d.Scan.P99 <= 3*d.Ref.P99))
		add("sale → confirmation mail in the mail server", "p99 < 5 s, none missed",
			fmt.Sprintf("p99 %.0f ms (p50 %.0f), %d missed", d.SaleToMail.P99, d.SaleToMail.P50, d.MailMissed), "", "",
			verdict(d.MailMissed == 0 && d.SaleToMail.N > 0 && d.SaleToMail.P99 < 5000))
	} else {
		missing("door check-ins; sale → mail", "p99 ≤ 3 × GET /api/v1/me; mail p99 < 5 s", "door phase not run")
	}

	// Rows the bench checks beyond those: opening a sale, standing places.
	if o := r.Opening; o != nil && o.Warmed != nil && o.Cold != nil {
		add(fmt.Sprintf("first hold of a %s-seat sale", num(float64(o.Seats))), "event loaded before its first buyer",
			fmt.Sprintf("warmed at start: max %.0f ms", o.Warmed.Latency.Max), fmt.Sprintf("a cold process: max %.0f ms", o.Cold.Latency.Max),
			fmt.Sprintf("%.2f", ratio2(o.Warmed.Latency.Max, o.Cold.Latency.Max)), verdict(o.Warmed.Latency.Max < 200))
	}
	if g := r.GA; g != nil {
		add(fmt.Sprintf("standing places: flash sale of %s places, %d buyers", num(float64(g.Places)), g.Buyers), "exactly every place granted, never more",
			fmt.Sprintf("%s granted, %s held in Postgres; %s places/s", num(float64(g.Granted)), num(float64(g.Held)), num(g.PerSec)),
			fmt.Sprintf("seated, same buyers: %s holds/s", num(g.SeatedPS)), fmt.Sprintf("%.2f", ratio2(g.PerSec, g.SeatedPS)),
			verdict(g.Granted == g.Places && g.Held == g.Places))
		if k := g.Keyed; k != nil {
			add("standing places with an Idempotency-Key, each sent twice", "every place granted once; every repeat the same hold",
				fmt.Sprintf("%s granted; repeats %s same, %d otherwise; %s held after", num(float64(k.Granted)), num(float64(k.Same)), k.NotSame, num(float64(k.HeldThen))),
				fmt.Sprintf("without keys: %s places/s", num(g.PerSec)), fmt.Sprintf("%.2f", ratio2(k.PerSec, g.PerSec)),
				verdict(k.Granted == g.Places && k.Held == g.Places && k.NotSame == 0 && k.HeldThen == g.Places))
		}
	}

	if i := r.Idle; i != nil {
		add("idle seatd serve, one on-sale event loaded: CPU per minute", "background work only; reported",
			fmt.Sprintf("seatd %.0f ms", i.SeatdMSPerMin),
			fmt.Sprintf("Postgres %.0f ms, Redis %.0f ms in the same window", i.PostgresMSPerMin, i.RedisMSPerMin), "", "reported")
	} else {
		missing("idle seatd serve: CPU per minute", "background work only; reported", "idle phase not run")
	}

	if rm := r.Room; rm != nil {
		name := fmt.Sprintf("waiting room, %s visitors on one process", num(float64(rm.Visitors)))
		heap := max(rm.HeapPerVisitorPolling, rm.HeapPerVisitorJoined)
		add(name+": seatd memory a visitor", "heap ≤ 2 KiB a visitor",
			fmt.Sprintf("heap %.0f B polling, %.0f B after joining; RSS %.0f B", rm.HeapPerVisitorPolling, rm.HeapPerVisitorJoined, rm.RSSPerVisitorPolling),
			fmt.Sprintf("before anyone joined: heap %.0f MiB", rm.HeapBeforeMiB), fmt.Sprintf("%.2f", heap/2048), verdict(heap <= 2048))
		add(name+": position answer under the polling load", "reported beside GET /api/v1/me",
			fmt.Sprintf("p99 %.1f ms from due time (%.1f from sending), %s polls/s, %d not sent", rm.Poll.P99, rm.PollSent.P99, num(rm.PollPerSec), rm.PollNotSent),
			fmt.Sprintf("GET /api/v1/me, same schedule: p99 %.1f ms (%.1f from sending)", rm.Ref.P99, rm.RefSent.P99),
			fmt.Sprintf("%.2f", ratio2(rm.Poll.P99, rm.Ref.P99)), "reported")
		if rm.Update.N > 0 {
			add(name+": position update reaching every visitor", "p99 ≤ the page's poll interval (p99) + 1 s",
				fmt.Sprintf("p99 %.1f s, max %.1f s; past the interval p99 %.0f ms; %d unseen", rm.Update.P99/1000, rm.Update.Max/1000, rm.UpdateLate.P99, rm.UpdateUnseen),
				fmt.Sprintf("poll interval the page waited: p99 %.1f s", rm.UpdateGap.P99/1000),
				fmt.Sprintf("%.2f", ratio2(rm.Update.P99, rm.UpdateGap.P99)), verdict(rm.UpdateUnseen == 0 && rm.Update.P99 <= rm.UpdateGap.P99+1000))
		}
		acc := ratio2(rm.AdmittedPerMinute, float64(rm.RatePerMinute))
		add(name+": admission rate", "within ±5 % of the set rate",
			fmt.Sprintf("%s a minute (%s in %.0f s)", num(rm.AdmittedPerMinute), num(float64(rm.Admitted)), rm.AdmitSeconds),
			fmt.Sprintf("set: %s a minute", num(float64(rm.RatePerMinute))), fmt.Sprintf("%.3f", acc), verdict(acc >= 0.95 && acc <= 1.05))
		if rm.Holds != nil && rm.HoldsRef != nil {
			x := ratio2(rm.Holds.Latency.P99, rm.HoldsRef.Latency.P99)
			add(name+": holds of admitted buyers while the line waits", "p99 ≤ 1.2 × without the room",
				fmt.Sprintf("p99 %.1f ms, %s holds/s", rm.Holds.Latency.P99, num(rm.Holds.Rate)),
				fmt.Sprintf("room off, nobody polling: p99 %.1f ms, %s holds/s", rm.HoldsRef.Latency.P99, num(rm.HoldsRef.Rate)),
				fmt.Sprintf("%.2f", x), verdict(x > 0 && x <= 1.2 && rm.Holds.Failed == 0))
		}
	} else {
		missing("waiting room, 100 000 visitors on one process", "≤ 2 KiB heap a visitor; admission ±5 % of the rate", "room phase not run")
	}
	if p := r.Payments; p != nil && p.On != nil && p.Off != nil {
		x := ratio2(p.On.PerSec, p.Off.PerSec)
		add(fmt.Sprintf("payments: flash sale of %s sales, %d buyers, through the test provider", num(float64(p.On.Sales)), p.Buyers),
			"sales/s ≥ 0.5 × the same sale without payment; no seat sold twice",
			fmt.Sprintf("%s sales/s; card → webhook → booking p99 %.0f ms; %d seats twice", num(p.On.PerSec), p.On.Pay.P99, p.On.SeatsTwice),
			fmt.Sprintf("without payment: %s sales/s", num(p.Off.PerSec)), fmt.Sprintf("%.2f", x),
			verdict(x >= 0.5 && p.On.SeatsTwice == 0 && p.Off.SeatsTwice == 0 && p.On.Unbooked == 0))
	} else {
		missing("payments", "sales/s ≥ 0.5 × the same sale without payment", "pay phase not run")
	}
	if t := r.Tail; t != nil && t.Holds != nil {
		l := t.Holds.Latency
		x := ratio2(l.Max, l.P99)
		add(fmt.Sprintf("holds' tail at %d open connections, %d events of %s seats cached", t.Holds.Clients, t.Events, num(float64(t.SeatsPerEvent))), "max ≤ 5 × p99",
			fmt.Sprintf("p99.9 %.1f ms, max %.1f ms; heap %.0f MiB", l.P999, l.Max, t.HeapMiB),
			fmt.Sprintf("p99 %.1f ms, same window", l.P99), fmt.Sprintf("%.2f", x), verdict(x > 0 && x <= 5 && t.Holds.Failed == 0))
	} else {
		missing("holds' tail with several big events cached", "max ≤ 5 × p99", "tail phase not run")
	}
	if si := r.SignIns; si != nil {
		ok := si.Failed == 0 && si.NoRetryAfter == 0
		ref, ratio := "–", ""
		if si.Holds != nil && si.HoldsRef != nil {
			ref = fmt.Sprintf("holds p99 %.1f ms during the surge, %.1f ms without", si.Holds.Latency.P99, si.HoldsRef.Latency.P99)
			ratio = fmt.Sprintf("%.2f", ratio2(si.Holds.Latency.P99, si.HoldsRef.Latency.P99))
		}
		refusals := 0
		for _, n := range si.Refusals {
			refusals += n
		}
		add(fmt.Sprintf("sign-in surge: %s sign-ins %d at a time", num(float64(si.Total)), si.Conns), "all succeed; every refusal carries Retry-After",
			fmt.Sprintf("%d signed in, %d failed; %.1f/s, p99 %.0f ms; %d refusals, %d without Retry-After", si.Succeeded, si.Failed, si.PerSec, si.SignIn.P99, refusals, si.NoRetryAfter),
			ref, ratio, verdict(ok))
	} else {
		missing("sign-in surge", "all succeed; every refusal carries Retry-After", "signin phase not run")
	}
	var slots []string
	for _, si := range r.SignInSlots {
		if si.Holds != nil && si.HoldsRef != nil {
			slots = append(slots, fmt.Sprintf("%d slots: %.1f sign-ins/s, holds p99 %.1f ms (%.2f × without)",
				si.Slots, si.PerSec, si.Holds.Latency.P99, ratio2(si.Holds.Latency.P99, si.HoldsRef.Latency.P99)))
		}
	}
	if len(slots) > 1 {
		add("sign-in surge by password-hashing slots (SEATD_MAX_PASSWORD_HASHES)", "reported: the default balances sign-ins/s and the holds' p99",
			strings.Join(slots, "; "), "each setting's holds without the surge, same run", "", "reported")
	}

	return rows
}

// perfTable is perfRows as a Markdown table, with the phases the run could
// not measure under it.
func perfTable(r *Report) string {
	var b strings.Builder
	b.WriteString("| what | target | measured | reference, same run | ratio | verdict |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, row := range perfRows(r) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(row.What), cell(row.Target), cell(row.Figure), cell(row.Reference), cell(row.Ratio), row.Verdict)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "\nNot measured in this run: %s (%s).\n", e.Phase, cell(e.Error))
	}
	return b.String()
}

// cell keeps a value inside its Markdown table cell.
func cell(s string) string {
	if s == "" {
		return "–"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// num writes a whole figure with thin groups of three digits: 10 000.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if len(s) > 4 {
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteRune(' ')
			}
			b.WriteRune(c)
		}
		s = b.String()
	}
	if neg {
		s = "-" + s
	}
	return s
}
