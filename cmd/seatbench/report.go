package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one run measured; it is written as JSON.
type Report struct {
	Started   time.Time    `json:"started"`
	Finished  time.Time    `json:"finished"`
	Seconds   float64      `json:"seconds"`
	Mode      string       `json:"mode"`
	Machine   Machine      `json:"machine"`
	Idle      *Idle        `json:"idle,omitempty"`
	Opening   *Opening     `json:"opening,omitempty"`
	Holds     []*HoldLevel `json:"holds,omitempty"`
	Paced     *HoldLevel   `json:"paced,omitempty"`
	Fallback  []*HoldLevel `json:"fallback,omitempty"`
	Multi     []*HoldLevel `json:"multi_process,omitempty"`
	HotSeat   *HotSeat     `json:"hot_seat,omitempty"`
	Best      *Best        `json:"best_available,omitempty"`
	Occupancy *Occupancy   `json:"occupancy,omitempty"`
	Charts    *ChartImport `json:"chart_import,omitempty"`
	Live      *Live        `json:"live,omitempty"`
	// LiveAcross is live fan-out through haproxy over several processes.
	LiveAcross *LiveAcross `json:"live_across_processes,omitempty"`
	Webhooks   *Webhooks   `json:"webhooks,omitempty"`
	GA         *GAFlash    `json:"ga_flash_sale,omitempty"`
	Waitlist   *Waitlist   `json:"waitlist,omitempty"`
	Door       *Door       `json:"door,omitempty"`
	Room       *Room       `json:"waiting_room,omitempty"`
	Tail       *Tail       `json:"tail,omitempty"`
	Payments   *Payments   `json:"payments,omitempty"`
	SignIns    *SignIns    `json:"sign_in_surge,omitempty"`
	// SignInSlots are the surge under every hashing-slot setting
	// measured, the shipped one (SignIns) included.
	SignInSlots []*SignIns   `json:"sign_in_surge_by_slots,omitempty"`
	Expiry      *Expiry      `json:"expiry,omitempty"`
	BigMap      *BigMap      `json:"big_map,omitempty"`
	Profiles    []string     `json:"profiles,omitempty"`
	Targets     []Target     `json:"targets"`
	Errors      []PhaseError `json:"errors,omitempty"`
}

// PhaseError is a phase (or part of one) that could not be measured.
type PhaseError struct {
	Phase string `json:"phase"`
	Error string `json:"error"`
}

func (r *Report) failed(phase string, err error) {
	r.Errors = append(r.Errors, PhaseError{Phase: phase, Error: err.Error()})
}

// holdsAt returns the fast-path and pgbench results of the holds phase
// at c buyers, if it ran.
func (r *Report) holdsAt(c int) (fast, ref *Load) {
	for _, h := range r.Holds {
		if h.Buyers == c {
			return h.HTTP, h.Ref
		}
	}
	return nil, nil
}

// Target is one target of docs/performance.md checked against this run.
type Target struct {
	What    string `json:"what"`
	Target  string `json:"target"`
	Result  string `json:"result"`
	Met     bool   `json:"met"`
	Verdict string `json:"verdict,omitempty"` // met, not met, or not measured (and why)
}

// evaluate checks the targets this run measured: the rows of
// docs/performance.md (perfRows) whose phase ran.
func (r *Report) evaluate() {
	r.Targets = nil
	for _, row := range perfRows(r) {
		if !row.Ran {
			continue
		}
		result := row.Figure
		if row.Reference != "" {
			result += "; reference " + row.Reference
		}
		if row.Ratio != "" {
			result += "; ratio " + row.Ratio
		}
		r.Targets = append(r.Targets, Target{What: row.What, Target: row.Target, Result: result,
			Met: strings.HasPrefix(row.Verdict, met), Verdict: strings.Trim(row.Verdict, "*")})
	}
}

// write saves the report as latest.json in dir, and its table as
// latest.txt. Earlier runs are in git's history; a run meant to be kept
// apart (a baseline, one side of an A/B) goes elsewhere with -out or is
// copied under a name of its own.
func (r *Report) write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	b = append(b, '\n')
	var table bytes.Buffer
	r.printTable(&table)
	path := filepath.Join(dir, "latest.json")
	for name, content := range map[string][]byte{"latest.json": b, "latest.txt": table.Bytes()} {
		// Written beside and renamed, so a reader never sees half a file.
		tmp := filepath.Join(dir, name+".tmp")
		if err := os.WriteFile(tmp, content, 0o644); err != nil {
			return "", err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return "", err
		}
	}
	return path, nil
}

// printTable prints the run as one table: every figure next to its
// reference and the ratio between them where there is one, and the
// target it answers.
func (r *Report) printTable(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "seatd bench (%s) %s, %.0fs\n", r.Mode, r.Started.Format(time.RFC3339), r.Seconds)
	fmt.Fprintf(w, "machine: %d CPUs (%s), %.1f GiB RAM, Linux %s, %s, %s (fsync=%s, synchronous_commit=%s, shared_buffers=%s), %s; app, Postgres, Redis and load generator on the same machine, loopback\n",
		m.CPUs, m.CPUModel, float64(m.MemoryMiB)/1024, m.Kernel, m.GoVersion, m.Postgres, m.PostgresConf["fsync"],
		m.PostgresConf["synchronous_commit"], m.PostgresConf["shared_buffers"], m.Redis)
	if m.LoadAvg != "" {
		fmt.Fprintf(w, "load average when the run started: %s (other work on these cores moves throughput; see \"others\" in the CPU rows)\n", m.LoadAvg)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	row("measurement", "result", "reference", "ratio", "target")
	row("-----------", "------", "---------", "-----", "------")
	lat := func(l Latency) string { return fmt.Sprintf("%.1f / %.1f / %.1f ms", l.P50, l.P95, l.P99) }
	cpu := func(l *Load, ref bool) string {
		c := l.CPUPerHold
		s := fmt.Sprintf("seatd %.0f + pg %.0f + redis %.0f + client %.0f", c.Seatd, c.Postgres, c.Redis, c.Client)
		if ref {
			s = fmt.Sprintf("pg %.0f + pgbench %.0f", c.Postgres, c.Client)
		}
		if r := l.roundTrips(); r != "" && !ref {
			s += "; " + r
		}
		if o := l.CPU.otherShare(); o >= 0.05 {
			s += fmt.Sprintf(" (others: %.0f%% of CPU)", o*100)
		}
		return s
	}
	if o := r.Opening; o != nil && o.Cold != nil {
		name := fmt.Sprintf("opening of a %d-seat sale, %d buyers", o.Seats, o.Buyers)
		row(name+": first hold, cold process p50/max", fmt.Sprintf("%.0f / %.0f ms", o.Cold.Latency.P50, o.Cold.Latency.Max),
			"loads the event inside the first holds", "", "")
		if o.Warmed != nil {
			row(name+": first hold, warmed at startup p50/max", fmt.Sprintf("%.1f / %.1f ms", o.Warmed.Latency.P50, o.Warmed.Latency.Max),
				fmt.Sprintf("event loaded %.0f ms after start", o.WarmMS), "", "")
		}
		if s := o.Steady; s != nil {
			row(name+": steady p50/p95/p99 (per request, closed loop)", lat(s.Latency)+failures(s),
				fmt.Sprintf("%.0f holds/s; no coordinated-omission correction", s.Rate), "", "p99 < 20 ms")
		}
	}
	for _, h := range r.Holds {
		name := fmt.Sprintf("holds, %d buyers (fast path)", h.Buyers)
		refRate, refLat, refCPU, ratio := "-", "-", "-", "-"
		if h.Ref != nil {
			refRate = fmt.Sprintf("%.0f/s pgbench -c %d", h.Ref.Rate, h.Ref.Clients)
			refLat = lat(h.Ref.Latency)
			refCPU = cpu(h.Ref, true)
			ratio = fmt.Sprintf("%.2f", h.RateRatio)
		}
		row(name+" rate", fmt.Sprintf("%.0f/s%s", h.HTTP.Rate, failures(h.HTTP)), refRate, ratio, "≥ 0.50 (stretch 1.00)")
		latTarget := ""
		if h.Buyers == 200 {
			latTarget = "p95 < 25, p99 < 50 ms (see paced)"
		}
		row(name+" p50/p95/p99", lat(h.HTTP.Latency), refLat,
			fmt.Sprintf("%.1f / %.1f / %.1f", h.P50Ratio, h.P95Ratio, h.P99Ratio), latTarget)
		row(name+" CPU µs/hold", cpu(h.HTTP, false), refCPU, "", "")
		if s := h.Shared; s != nil {
			row(name+" vs the shared statement", fmt.Sprintf("%.0f/s", h.HTTP.Rate),
				fmt.Sprintf("%.0f/s pgbench, %s; %.0f/s charged with Redis and load generator", s.Rate, s.Note, h.SharedCharged),
				fmt.Sprintf("%.2f", h.CeilingRatio), "≥ 0.70")
			row(name+" shared statement CPU µs/hold", "", cpu(s, true), "", "")
		}
	}
	if h := r.Paced; h != nil && h.HTTP != nil {
		name := fmt.Sprintf("holds, %d buyers paced at %.0f/s", h.Buyers, h.HTTP.Offered)
		refLat, ratios := "-", "-"
		if h.Ref != nil {
			refLat = lat(h.Ref.Latency) + fmt.Sprintf(" pgbench -R -c %d", h.Ref.Clients)
			ratios = fmt.Sprintf("%.1f / %.1f / %.1f", h.P50Ratio, h.P95Ratio, h.P99Ratio)
		}
		row(name+" p50/p95/p99", lat(h.HTTP.Latency)+failures(h.HTTP), refLat, ratios, "p95 < 25, p99 < 50 ms")
		row(name+" CPU µs/hold", cpu(h.HTTP, false), "", "", "")
	}
	for _, h := range r.Fallback {
		name := fmt.Sprintf("holds, %d buyers (Redis down, Postgres only)", h.Buyers)
		base, ratio := "-", "-"
		if h.Base != nil {
			base = fmt.Sprintf("%.0f/s fast path", h.Base.Rate)
			ratio = fmt.Sprintf("fast/fallback %.2f", ratio2(h.Base.Rate, h.HTTP.Rate))
		}
		if h.Ref != nil {
			base += fmt.Sprintf("; %.0f/s pgbench", h.Ref.Rate)
			ratio += fmt.Sprintf("; vs pgbench %.2f", h.RateRatio)
		}
		row(name+" rate", fmt.Sprintf("%.0f/s%s", h.HTTP.Rate, failures(h.HTTP)), base, ratio, "keeps succeeding")
		row(name+" p50/p95/p99", lat(h.HTTP.Latency), "", "", "")
		row(name+" CPU µs/hold", cpu(h.HTTP, false), "", "", "")
	}
	for _, h := range r.Multi {
		name := fmt.Sprintf("holds, %d buyers over %d processes", h.Buyers, h.HTTP.Procs)
		if h.Balanced {
			name += " behind haproxy"
		}
		base, ratio := "-", "-"
		if h.Base != nil {
			base = fmt.Sprintf("%.0f/s one process", h.Base.Rate)
			ratio = fmt.Sprintf("%.2f", h.BaseRatio)
		}
		if h.Ref != nil {
			base += fmt.Sprintf("; %.0f/s pgbench", h.Ref.Rate)
			ratio += fmt.Sprintf("; vs pgbench %.2f", h.RateRatio)
		}
		row(name+" rate", fmt.Sprintf("%.0f/s%s", h.HTTP.Rate, failures(h.HTTP)), base, ratio, "")
		row(name+" p50/p95/p99", lat(h.HTTP.Latency), "", "", "")
		if h.Base != nil {
			c := h.HTTP.CPUPerHold
			bal := ""
			if h.Balanced {
				bal = fmt.Sprintf(" + haproxy %.0f", c.Balancer)
			}
			row(name+" CPU µs/hold", cpu(h.HTTP, false)+bal, fmt.Sprintf("one process: seatd %.0f", h.Base.CPUPerHold.Seatd),
				fmt.Sprintf("%.2f", ratio2(c.Seatd, h.Base.CPUPerHold.Seatd)), "seatd ≤ 1.2 × one process's")
		}
	}
	if la := r.LiveAcross; la != nil {
		name := fmt.Sprintf("live through haproxy, %d sockets over %d processes", la.Sockets, la.Procs)
		row(name+": hold → frame p50/p95/p99", lat(la.Latency)+others(la.OthersCPU), fmt.Sprintf("%d of %d frames missed", la.Missed, la.Expected), "", "p99 < 100 ms")
	}
	if g := r.GA; g != nil {
		name := fmt.Sprintf("GA flash sale, %d places, %d buyers", g.Places, g.Buyers)
		row(name+": places/s, p50/p95/p99", fmt.Sprintf("%.0f/s, %s", g.PerSec, lat(g.Latency)),
			fmt.Sprintf("seated, same buyers: %.0f/s, %s", g.SeatedPS, lat(g.Seated)), fmt.Sprintf("%.2f", g.PerSec/g.SeatedPS), "")
		row(name+": granted / held / retries / sold_out / other", fmt.Sprintf("%d / %d / %d / %d / %d", g.Granted, g.Held, g.Retries, g.SoldOut, g.Other),
			"", "", fmt.Sprintf("exactly %d", g.Places))
		if k := g.Keyed; k != nil {
			kn := "GA flash sale with Idempotency-Key"
			row(kn+": places/s, p50/p95/p99", fmt.Sprintf("%.0f/s, %s", k.PerSec, lat(k.Latency)),
				fmt.Sprintf("without keys, just before: %.0f/s, p99 %.1f ms", g.PerSec, g.Latency.P99), fmt.Sprintf("%.2f", ratio2(k.Latency.P99, g.Latency.P99)), "")
			row(kn+": CPU a place, Postgres / seatd", fmt.Sprintf("%.0f / %.0f µs", perPlaceUS(k.CPU.Postgres, k.Granted), perPlaceUS(k.CPU.Seatd, k.Granted)),
				fmt.Sprintf("without keys: %.0f / %.0f µs", perPlaceUS(g.CPU.Postgres, g.Granted), perPlaceUS(g.CPU.Seatd, g.Granted)),
				fmt.Sprintf("%.2f", ratio2(perPlaceUS(k.CPU.Postgres, k.Granted), perPlaceUS(g.CPU.Postgres, g.Granted))), "")
			row(kn+": granted / held / retries / other", fmt.Sprintf("%d / %d / %d / %d", k.Granted, k.Held, k.Retries, k.Other), "", "", fmt.Sprintf("exactly %d", g.Places))
			row(kn+", sent again with the same keys: same hold / otherwise / held then", fmt.Sprintf("%d / %d / %d", k.Same, k.NotSame, k.HeldThen),
				"p99 "+fmt.Sprintf("%.1f ms", k.Repeat.P99), "", fmt.Sprintf("all / 0 / %d", g.Places))
		}
	}
	if h := r.HotSeat; h != nil {
		name := fmt.Sprintf("hot seat, %d buyers", h.Buyers)
		row(name+": granted / refused / other", fmt.Sprintf("%d / %d / %d", h.Granted, h.Refused, h.Other), "", "",
			"exactly 1 hold")
		row(name+": wall, slowest answer", fmt.Sprintf("%.0f ms, %.0f ms", h.WallMS, h.MaxMS), others(h.OthersCPU), "", "all < 1 s")
		row(name+": refusal p50/p95/p99", lat(h.Refusals), "", "", "")
		row(name+": Postgres writes by refusals", fmt.Sprintf("%d (hold statements %d - 1)", h.RefusalPGWrites, h.PGHoldStatements),
			fmt.Sprintf("refused by hot cache %d, Redis %d, Postgres %d", h.ByTier["hot"], h.ByTier["redis"], h.ByTier["postgres"]),
			"", "0")
		row(name+": rows for the seat", fmt.Sprintf("%d hold, %d audit, version %d", h.HoldRows, h.AuditRows, h.SeatVersion),
			"", "", "1 hold")
	}
	if wh := r.Webhooks; wh != nil {
		row(fmt.Sprintf("webhooks, %.0f changes/s: commit → delivery p50/p95/p99", wh.Offered), lat(wh.Latency),
			fmt.Sprintf("%d changes at %.0f/s", wh.Changes, wh.Achieved), "", "p99 < 1 s")
		row(fmt.Sprintf("webhooks, receiver down %.0f s: delivered / expected", wh.OutageSeconds), fmt.Sprintf("%d / %d", wh.Delivered, wh.Expected),
			fmt.Sprintf("%d changes while down; drained %.1f s after return; %d repeats", wh.OutageChanges, wh.DrainSeconds, wh.Duplicates),
			"", "none lost")
		row("webhooks: seats delivered out of order", fmt.Sprintf("%d", wh.Reordered), "", "", "0")
	}
	if x := r.Best; x != nil {
		name := fmt.Sprintf("best available, %d buyers × 4 seats", x.Buyers)
		row(name+": granted / refused / other", fmt.Sprintf("%d / %d / %d", x.Granted, x.Refused, x.Other), "", "", "all granted")
		row(name+": p50/p95/p99, wall (median burst)", lat(x.Latency)+fmt.Sprintf(", %.0f ms", x.WallMS),
			"same burst of GET /api/v1/me: "+lat(x.Floor), fmt.Sprintf("%.2f", ratio2(x.Latency.P99, x.Floor.P99)), "p99 < 100 ms")
		row(name+": p99 of each burst", burstP99s(x.Bursts)+" ms", "", "", "")
		if len(x.Writes) > 0 {
			w := x.Writes[0]
			walls := make([]float64, len(x.Writes))
			for i, v := range x.Writes {
				walls[i] = v.WallMS
			}
			row(fmt.Sprintf("%s: the writes alone (%d holds, %d hold statements at once in pgbench)", name, w.Seats, w.Statements),
				fmt.Sprintf("%.1f ms (runs %s ms)", x.WritesMS, burstList(walls)), fmt.Sprintf("the median burst's p99: %.1f ms", x.Latency.P99),
				fmt.Sprintf("%.2f", ratio2(x.Latency.P99, x.WritesMS)), "")
		}
		row(name+": seats twice / blocks apart / orphans (all bursts)", fmt.Sprintf("%d / %d / %d", x.SeatsTwice, x.NotTogether, x.Orphans), "", "", "0 / 0 / 0")
		if k := x.Keyed; k != nil {
			kn := fmt.Sprintf("best available with Idempotency-Key, %d bursts", len(k.Bursts))
			row(kn+": median p99", fmt.Sprintf("%.1f ms (bursts %s)", k.P99, burstP99s(k.Bursts)),
				fmt.Sprintf("the plain burst before each: %.1f ms", k.PlainP99), fmt.Sprintf("%.2f", ratio2(k.P99, k.PlainP99)), "")
			row(kn+": CPU a burst, Postgres / seatd (medians)", fmt.Sprintf("%.0f / %.0f ms", k.Postgres, k.Seatd),
				fmt.Sprintf("plain: %.0f / %.0f ms", k.PlainPostgres, k.PlainSeatd), fmt.Sprintf("%.2f", ratio2(k.Postgres, k.PlainPostgres)), "")
			row(kn+": granted; seats twice / blocks apart / orphans", fmt.Sprintf("%d of %d; %d / %d / %d", k.Granted, k.Requests, k.SeatsTwice, k.NotTogether, k.Orphans), "", "", "all; 0 / 0 / 0")
			row(kn+", sent again with the same keys: same holds / otherwise / holds more", fmt.Sprintf("%d / %d / %d", k.RepeatSame, k.RepeatOther, k.ExtraHolds),
				"p99 of each repeat: "+burstList(k.RepeatP99)+" ms", "", "all / 0 / 0")
		}
		// The bursts are CPU-bound on cores other work may share, so their
		// p99 follows the machine's speed of the moment; the paced pgbench
		// row, run just before them with the same statement at the same
		// rate in every run, says what that speed was.
		if h := r.Paced; h != nil && h.Ref != nil && h.Ref.CPUPerHold.Postgres > 0 {
			row(name+": the machine's speed just before", fmt.Sprintf("Postgres %.0f µs a hold", h.Ref.CPUPerHold.Postgres),
				"in the paced pgbench row (the same statement and rate every run)", "", "")
		}
	}
	if i := r.Idle; i != nil {
		row("idle seatd serve, one on-sale event: CPU per minute", fmt.Sprintf("seatd %.0f ms", i.SeatdMSPerMin),
			fmt.Sprintf("Postgres %.0f ms, Redis %.0f ms%s", i.PostgresMSPerMin, i.RedisMSPerMin, others(i.OthersCPU)), "", "")
	}
	if o := r.Occupancy; o != nil {
		name := fmt.Sprintf("occupancy, %d seats", o.Seats)
		row(name+": served p50/p99", fmt.Sprintf("%.2f / %.2f ms", o.Served.P50, o.Served.P99),
			fmt.Sprintf("SQL %.1f ms%s", o.Recomputed.P50, others(o.OthersCPU)), fmt.Sprintf("%.3f", ratio2(o.Served.P50, o.Recomputed.P50)), "< 20 ms")
		row(name+": recomputed (SQL) p50/p99", fmt.Sprintf("%.1f / %.1f ms", o.Recomputed.P50, o.Recomputed.P99),
			fmt.Sprintf("just written: %.1f / %.1f ms", o.RecomputedFresh.P50, o.RecomputedFresh.P99), "", "< 200 ms")
		row(name+": first load into the hot cache", fmt.Sprintf("%.0f ms", o.ColdLoadMS), "", "", "")
		row(name+": served = recomputed", fmt.Sprintf("%v", o.Consistent), "", "", "")
	}
	if c := r.Charts; c != nil && len(c.JSONMS) > 0 && len(c.CSVMS) > 0 {
		name := fmt.Sprintf("chart import, %d seats", c.Seats)
		row(name+": JSON, each import", msList(c.JSONMS), fmt.Sprintf("%.1f MB body%s", float64(c.JSONBytes)/1e6, others(c.OthersCPU)), "", "< 5 s")
		row(name+": CSV, each import", msList(c.CSVMS), fmt.Sprintf("%.1f MB body", float64(c.CSVBytes)/1e6), "", "< 5 s")
	}
	if l := r.Live; l != nil {
		name := fmt.Sprintf("live, %d WebSocket clients", l.Clients)
		row(name+": connected", fmt.Sprintf("%d in %.1f s (%d failed)", l.Connected, l.ConnectSeconds, l.ConnectFailed), "", "", "")
		row(name+": hold → frame p50/p95/p99", lat(l.Latency),
			fmt.Sprintf("hold answer %.1f / %.1f / %.1f ms", l.HoldAnswer.P50, l.HoldAnswer.P95, l.HoldAnswer.P99), "", "p99 < 100 ms")
		row(name+": frames missed", fmt.Sprintf("%d of %d", l.Missed, l.Expected), "", "", "0")
		row(name+": CPU µs per frame delivered", fmt.Sprintf("server %.1f", l.ServerCPUPerFrameUS),
			fmt.Sprintf("clients %.1f (same cores)%s", l.ClientCPUPerFrameUS, others(l.OthersCPU)), "", "")
		row(name+": memory per client", fmt.Sprintf("%.1f KiB RSS", l.RSSPerClientKiB),
			fmt.Sprintf("heap %.1f + stacks %.1f KiB; %.1f goroutines", l.HeapPerClientKiB, l.StackPerClientKiB, l.GoroutinesPerClient),
			"", "< 32 KiB")
		if f := l.Flash; f != nil {
			name := fmt.Sprintf("live at a sale's pace, %d holds/s for %.1f s to the same sockets", f.Rate, f.Seconds)
			row(name+": frames a socket a second", fmt.Sprintf("%.1f", f.FramesPerSocket),
				fmt.Sprintf("%.1f changes a frame; tick %s", f.ChangesPerFrame, f.Tick), "", "≤ 1 a tick")
			row(name+": hold → frame p50/p95/p99 (sampled)", lat(f.Latency), "", "", "")
			row(name+": sockets dropped, samples missed, holds failed", fmt.Sprintf("%d, %d, %d", f.Dropped, f.Missed, f.Failed), "", "", "0")
			row(name+": CPU µs per change delivered to a socket", fmt.Sprintf("server %.2f", f.ServerCPUPerChangeUS),
				fmt.Sprintf("clients %.2f (same cores)%s", f.ClientCPUPerChangeUS, others(f.CPU.otherShare())), "", "")
		}
	}
	if e := r.Expiry; e != nil {
		name := fmt.Sprintf("expiry, %d holds of %s", e.Holds, e.TTL)
		row(name+": held_until → available p50/p99/max", fmt.Sprintf("%.0f / %.0f / %.0f ms", e.Latency.P50, e.Latency.P99, e.Latency.Max),
			fmt.Sprintf("reaper every %s", e.ReaperInterval), "", "< 2 s")
		row(name+": missed", fmt.Sprintf("%d", e.Missed), "", "", "0")
	}
	if wl := r.Waitlist; wl != nil {
		name := fmt.Sprintf("waitlist, %d seats freed one at a time", wl.Frees)
		row(name+": free → offer frame p50/p99/max", fmt.Sprintf("%.0f / %.0f / %.0f ms", wl.Latency.P50, wl.Latency.P99, wl.Latency.Max),
			"the offer worker wakes on the freeing statement's NOTIFY", "", "< 2 s")
		row(name+": missed", fmt.Sprintf("%d", wl.Missed), "", "", "0")
	}
	if d := r.Door; d != nil {
		name := fmt.Sprintf("door, %d tickets scanned once by %d scanners", d.Tickets, d.Scanners)
		row(name+": scans/s", fmt.Sprintf("%.0f", d.PerSec), fmt.Sprintf("GET /api/v1/me %.0f/s", d.RefPerSec),
			fmt.Sprintf("%.2f", ratio2(d.PerSec, d.RefPerSec)), "")
		row(name+": scan p50/p95/p99", lat(d.Scan), "GET /api/v1/me "+lat(d.Ref), fmt.Sprintf("%.2f", ratio2(d.Scan.P99, d.Ref.P99)), "p99 ≤ 3 × reference")
		row(name+": second scan (already admitted) p50/p95/p99", lat(d.Rescan), "", "", "")
		row(name+": first scans refused", fmt.Sprintf("%d", d.Refused), "", "", "0")
		row(fmt.Sprintf("sale → confirmation mail in Mailpit, %d sales one at a time: p50/p99/max", d.Sales),
			fmt.Sprintf("%.0f / %.0f / %.0f ms", d.SaleToMail.P50, d.SaleToMail.P99, d.SaleToMail.Max),
			"QR codes and PDF rendered, outbox, SMTP", "", fmt.Sprintf("%d missed", d.MailMissed))
	}
	if rm := r.Room; rm != nil {
		name := fmt.Sprintf("waiting room, %d visitors", rm.Visitors)
		row(name+": join before the opening (cold) p50/p95/p99", lat(rm.Join),
			fmt.Sprintf("%.0f joins/s, %d connections, closed loop; no coordinated-omission correction", rm.JoinPerSec, rm.JoinConns), "", "")
		row(name+": seatd heap / RSS a visitor, polling (steady)", fmt.Sprintf("%.0f / %.0f B", rm.HeapPerVisitorPolling, rm.RSSPerVisitorPolling),
			fmt.Sprintf("after joining: %.0f / %.0f B; heap before %.0f MiB", rm.HeapPerVisitorJoined, rm.RSSPerVisitorJoined, rm.HeapBeforeMiB), "", "heap ≤ 2 KiB")
		row(name+": position poll p50/p95/p99 (from due time)", lat(rm.Poll)+fmt.Sprintf(" (%.0f/s, %d not sent)", rm.PollPerSec, rm.PollNotSent),
			"GET /api/v1/me, same schedule: "+lat(rm.Ref), fmt.Sprintf("%.2f", ratio2(rm.Poll.P99, rm.Ref.P99)), "")
		row(name+": position poll p50/p95/p99 (from sending)", lat(rm.PollSent), "GET /api/v1/me: "+lat(rm.RefSent),
			fmt.Sprintf("%.2f", ratio2(rm.PollSent.P99, rm.RefSent.P99)), "")
		row(name+": position update reaching every visitor p50/p99/max", fmt.Sprintf("%.1f / %.1f / %.1f s (%d steps × waiting visitors: %d, %d unseen)",
			rm.Update.P50/1000, rm.Update.P99/1000, rm.Update.Max/1000, rm.UpdateTicks, rm.Update.N, rm.UpdateUnseen),
			fmt.Sprintf("the page's poll interval p50/p99 %.1f / %.1f s; answer past it p99 %.0f ms, max %.0f ms", rm.UpdateGap.P50/1000, rm.UpdateGap.P99/1000, rm.UpdateLate.P99, rm.UpdateLate.Max),
			fmt.Sprintf("%.2f", ratio2(rm.Update.P99, rm.UpdateGap.P99)), "p99 ≤ poll interval p99 + 1 s")
		row(name+": admitted a minute", fmt.Sprintf("%.0f (%d in %.0f s)", rm.AdmittedPerMinute, rm.Admitted, rm.AdmitSeconds),
			fmt.Sprintf("set rate %d", rm.RatePerMinute), fmt.Sprintf("%.3f", ratio2(rm.AdmittedPerMinute, float64(rm.RatePerMinute))), "within ±5 %")
		if rm.Holds != nil && rm.HoldsRef != nil {
			row(name+fmt.Sprintf(": holds of %d admitted buyers p50/p95/p99", rm.Holds.Clients), lat(rm.Holds.Latency)+failures(rm.Holds),
				"room off, nobody polling: "+lat(rm.HoldsRef.Latency)+failures(rm.HoldsRef), fmt.Sprintf("%.2f", ratio2(rm.Holds.Latency.P99, rm.HoldsRef.Latency.P99)), "p99 ≤ 1.2 ×")
		}
	}
	if p := r.Payments; p != nil && p.On != nil && p.Off != nil {
		name := fmt.Sprintf("flash sale through the test payment provider, %d buyers × %d sales of %d seats", p.Buyers, p.On.Sales, p.SeatsPerSale)
		row(name+": sales/s", fmt.Sprintf("%.0f", p.On.PerSec), fmt.Sprintf("without payment: %.0f", p.Off.PerSec),
			fmt.Sprintf("%.2f", ratio2(p.On.PerSec, p.Off.PerSec)), "≥ 0.50")
		row(name+": sale p50/p95/p99", lat(p.On.Sale), "without payment: "+lat(p.Off.Sale), fmt.Sprintf("%.2f", ratio2(p.On.Sale.P99, p.Off.Sale.P99)), "")
		row(name+": card → webhook → booking p50/p95/p99", lat(p.On.Pay), fmt.Sprintf("%d read back without a booking", p.On.Unbooked), "", "")
		row(name+": seats sold twice", fmt.Sprintf("%d (%d sold, %d tickets)", p.On.SeatsTwice, p.On.SeatsSold, p.On.Tickets),
			fmt.Sprintf("without payment: %d (%d sold)", p.Off.SeatsTwice, p.Off.SeatsSold), "", "0")
	}
	if t := r.Tail; t != nil && t.Holds != nil {
		name := fmt.Sprintf("holds at %d connections, %d events of %d seats cached (heap %.0f MiB)", t.Holds.Clients, t.Events, t.SeatsPerEvent, t.HeapMiB)
		l := t.Holds.Latency
		row(name+": p99 / p99.9 / max", fmt.Sprintf("%.1f / %.1f / %.1f ms", l.P99, l.P999, l.Max)+failures(t.Holds),
			fmt.Sprintf("%.0f holds/s; %d of the slowest over 5 × p99", t.Holds.Rate, t.Stalls), fmt.Sprintf("%.2f", ratio2(l.Max, l.P99)), "max ≤ 5 × p99")
	}
	if si := r.SignIns; si != nil {
		name := fmt.Sprintf("sign-in surge, %d sign-ins %d at a time (bcrypt cost %d)", si.Total, si.Conns, si.Cost)
		row(name+": signed in / failed", fmt.Sprintf("%d / %d, %.1f/s", si.Succeeded, si.Failed, si.PerSec),
			fmt.Sprintf("refusals %s, %d without Retry-After", statusList(si.Refusals), si.NoRetryAfter), "", "all, each refusal with Retry-After")
		row(name+": sign-in p50/p95/p99 (retries included)", lat(si.SignIn), "each request: "+lat(si.Attempt), "", "")
		if si.Holds != nil && si.HoldsRef != nil {
			note := ""
			if si.Outlasted {
				note = " (the surge ended inside the window)"
			}
			row(name+fmt.Sprintf(": holds of %d buyers p50/p95/p99", si.Holds.Clients), lat(si.Holds.Latency)+failures(si.Holds)+note,
				"without the surge: "+lat(si.HoldsRef.Latency)+failures(si.HoldsRef), fmt.Sprintf("%.2f", ratio2(si.Holds.Latency.P99, si.HoldsRef.Latency.P99)), "")
		}
	}
	for _, si := range r.SignInSlots {
		if si.Holds == nil || si.HoldsRef == nil {
			continue
		}
		row(fmt.Sprintf("sign-in surge with %d hashing slots: sign-ins/s; holds p99 during the surge", si.Slots),
			fmt.Sprintf("%.1f/s (%d failed); holds p99 %.1f ms", si.PerSec, si.Failed, si.Holds.Latency.P99),
			fmt.Sprintf("without the surge: p99 %.1f ms", si.HoldsRef.Latency.P99), fmt.Sprintf("%.2f", ratio2(si.Holds.Latency.P99, si.HoldsRef.Latency.P99)), "")
	}
	if m := r.BigMap; m != nil {
		name := fmt.Sprintf("seat map, %d seats in %d sections, Chromium", m.Seats, m.Sections)
		row(name+": first map transferred", fmt.Sprintf("%.2f MB in %d requests", float64(m.Bytes)/1e6, m.Requests),
			fmt.Sprintf("page %.0f KB (%.0f KB decoded), refetch on socket open %.0f KB", float64(m.PageBytes)/1e3, float64(m.PageRawBytes)/1e3,
				float64(m.ResyncBytes)/1e3), "", "< 1.5 MB")
		row(name+": navigation → usable map", fmt.Sprintf("%.0f ms", m.UsableMS),
			fmt.Sprintf("cached CSS/JS %.0f ms; response end %.0f, DOMContentLoaded %.0f ms", m.UsableWarmMS, m.ResponseEndMS, m.DOMContentMS), "", "< 1.5 s")
		row(name+": JS heap used", fmt.Sprintf("%.1f MB", m.HeapUsedMB), fmt.Sprintf("%.1f MB after GC; %d DOM nodes", m.HeapAfterGCMB, m.DOMNodes), "", "< 100 MB")
		row(name+": sections wholly in the 1 400 × 1 000 window", fmt.Sprintf("%d of %d", m.SectionsInView, m.Sections), "", "", "all")
		row(name+": frame applied p50/p99/max", fmt.Sprintf("%.2f / %.2f / %.2f ms", m.FrameApply.P50, m.FrameApply.P99, m.FrameApply.Max),
			fmt.Sprintf("with layout max %.2f ms; hold → shown p50 %.0f ms", m.FrameLayout.Max, m.FrameVisible.P50), "", "< 16 ms")
	}
	_ = tw.Flush()
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\ntargets:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, t := range r.Targets {
			verdict := strings.ToUpper(t.Verdict)
			switch {
			case verdict != "":
			case t.Met:
				verdict = "MET"
			default:
				verdict = "NOT MET"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", verdict, t.What, t.Target, t.Result)
		}
		_ = tw.Flush()
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "not measured: %s: %s\n", e.Phase, e.Error)
	}
}

// others notes a noisy window: other processes' share of the machine.
func others(share float64) string {
	if share < 0.05 {
		return ""
	}
	return fmt.Sprintf(" (others: %.0f%% of CPU)", share*100)
}

func failures(l *Load) string {
	if l.Failed == 0 && !l.RanOut {
		return ""
	}
	s := fmt.Sprintf(" (%d failed", l.Failed)
	if l.RanOut {
		s += ", ran out of seats"
	}
	return s + ")"
}

// ratio2 is a/b without the "unknown" convention of ratio (for display).
func ratio2(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// msList shows durations in milliseconds: "812 / 790 / 801 ms".
func msList(ds []float64) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmt.Sprintf("%.0f", d)
	}
	return strings.Join(s, " / ") + " ms"
}

// burstP99s lists the bursts' p99 latencies in the order they ran.
func burstP99s(bs []BestBurst) string {
	v := make([]float64, len(bs))
	for i, x := range bs {
		v[i] = x.P99
	}
	return burstList(v)
}

// statusList shows counts by status: "429 12, 503 3" (none: "none").
func statusList(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(out, ", ")
}

// burstList lists figures in ms with one decimal.
func burstList(v []float64) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(out, ", ")
}
