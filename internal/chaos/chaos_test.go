package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"seatd/internal/testenv"
)

// chaosEnv is what a fault acts on.
type chaosEnv struct {
	t      *testing.T
	c      *cluster
	l      *load
	ws     []*watcher
	reader *client
	org    *client    // the organizer, for the registry
	pg     *privatePG // nil when running on the shared Postgres
	// pgFaults are the windows in which Postgres replies may have been
	// lost (for telling known lost-delta cases apart).
	pgFaults []window
	// reported dedupes acknowledgement violations across rows.
	reported map[string]bool
	// stuck remembers map violations already classified, by seat: a map
	// still missing the same change in a later row is the same case.
	stuck map[uuid.UUID]violation
}

// fault is one failure injected while the load runs. inject starts it and
// returns the function that heals it; after (optional) runs right after the
// heal, with the load still running.
type fault struct {
	name  string
	short bool // part of the default (short) run
	pg    bool // cuts Postgres replies
	// redis faults must not stop the maps: docs/failure-behaviour.md#redis-down
	// promises they keep updating while Redis is down, so they are checked mid-fault too.
	redis bool
	// partial faults hit the first process only.
	partial bool
	// crash kills the last process.
	crash bool
	// backWithin, when set, bounds the recovery once the heal is done
	// (the service answers again): no hold made later than this fails,
	// and the fast path is back within it.
	backWithin time.Duration
	inject     func(e *chaosEnv) (heal func())
	after      func(e *chaosEnv, r *row)
	skip       func(e *chaosEnv) string // a reason to skip, or ""
}

// row is one line of the chaos table. during runs from the fault to the
// end of the heal (for a restart, until the service answers again), after
// from there; fastPath counts from the end of the heal too, and healed is
// how long the heal itself took (a restarted service's own start).
type row struct {
	fault            string
	during, after    windowStats
	fastPath         time.Duration
	fastPathErr      error
	fastPathPolls    string // where fastPath's time went
	converge         time.Duration
	convergeErr      error
	violations       []violation
	notes            []string
	skipped          string
	faultFor, healed time.Duration
}

func redisToxic(typ string, attrs map[string]any, streams ...string) func(e *chaosEnv) func() {
	return func(e *chaosEnv) func() {
		var heals []func()
		for _, st := range streams {
			heals = append(heals, e.c.toxic(e.t, false, typ, st, attrs))
		}
		return func() {
			for _, h := range heals {
				h()
			}
		}
	}
}

var faults = []fault{
	{
		name: "redis kill -9", short: true, redis: true,
		inject: func(e *chaosEnv) func() {
			e.c.redis.Stop()
			return e.c.redis.Start
		},
	},
	{
		name: "redis slow (latency 300ms)", redis: true,
		inject: redisToxic("latency", map[string]any{"latency": 300, "jitter": 100}, "downstream"),
	},
	{
		name: "redis blackhole (timeout)", short: true, redis: true,
		inject: redisToxic("timeout", map[string]any{"timeout": 0}, "upstream", "downstream"),
	},
	{
		name: "redis reset_peer", redis: true,
		inject: redisToxic("reset_peer", map[string]any{"timeout": 0}, "upstream"),
	},
	{
		name: "redis FLUSHALL", short: true, redis: true,
		inject: func(e *chaosEnv) func() {
			rdb := redis.NewClient(&redis.Options{Addr: e.c.redis.Addr()})
			defer rdb.Close()
			if err := rdb.FlushAll(context.Background()).Err(); err != nil {
				e.t.Fatalf("flushall: %v", err)
			}
			return func() {}
		},
	},
	{
		name: "redis cut from one seatd", short: true, redis: true, partial: true,
		inject: func(e *chaosEnv) func() {
			n := e.c.nodes[0]
			up := e.c.toxic(e.t, false, "timeout", "upstream", map[string]any{"timeout": 0}, n)
			down := e.c.toxic(e.t, false, "timeout", "downstream", map[string]any{"timeout": 0}, n)
			return func() { up(); down() }
		},
	},
	{
		name: "seatd kill -9 + restart", short: true, crash: true,
		inject: func(e *chaosEnv) func() {
			n := e.c.nodes[len(e.c.nodes)-1]
			n.kill()
			return n.start
		},
		after: func(e *chaosEnv, r *row) {
			// A restarted process loads the event again (warming at
			// startup, or the first request): its map must be right from
			// then on, no more than the freshness bound behind Postgres
			// (the load's requests may have loaded it before this check,
			// and changes reach it by live delivery since).
			n := e.c.nodes[len(e.c.nodes)-1]
			ctx := context.Background()
			a, err := e.c.pgSeats(ctx)
			if err != nil {
				e.t.Fatal(err)
			}
			time.Sleep(time.Second) // not a condition: the bound itself (a second behind at most)
			view, err := e.reader.seats(ctx, n, e.c.event.ID)
			if err != nil {
				r.violations = append(r.violations, violation{msg: "restarted process: seats: " + err.Error()})
				return
			}
			b, err := e.c.pgSeats(ctx)
			if err != nil {
				e.t.Fatal(err)
			}
			if d := betweenSeats(view, a, b); d != "" {
				r.violations = append(r.violations, violation{msg: "restarted process's map: " + d})
			} else {
				r.notes = append(r.notes, "restarted process's map matched postgres")
			}
		},
	},
	{
		name: "postgres reset_peer", short: true, pg: true,
		inject: func(e *chaosEnv) func() {
			// Replies are cut: statements run, commits land, the answers
			// never arrive, and open transactions die mid-way.
			return e.c.toxic(e.t, true, "reset_peer", "downstream", map[string]any{"timeout": 0})
		},
	},
	{
		// The bound counts from the moment Postgres accepts connections
		// again: its own start (crash recovery, replaying the WAL since
		// its last checkpoint) is not seatd's to shorten.
		name: "postgres restart", pg: true, backWithin: time.Second,
		skip: func(e *chaosEnv) string {
			if e.pg == nil {
				return "needs a private Postgres (-chaos.full, postgres binaries and user)"
			}
			return ""
		},
		inject: func(e *chaosEnv) func() {
			e.pg.stop(e.t)
			return func() { e.pg.start(e.t) }
		},
	},
}

// onlyFault picks the faults to run by name, to study one of them.
var onlyFault = flag.String("chaos.fault", "", "run only the faults whose name matches this regular expression")

type timing struct {
	warm, fault, after, converge time.Duration
	buyers, hot, watchersPerNode int
	sections, rows, perRow       int
	ttl                          time.Duration
	// bestBuyers ask for the two best available seats, gaBuyers for
	// places of a GA section of gaCapacity places, waitBuyers join the
	// waitlist for a seat of waitSection.
	bestBuyers, gaBuyers, gaCapacity, waitBuyers int
}

// TestChaos runs every fault in turn against three seatd processes under
// load. It fails on any broken SQL invariant, any answer a client got that
// Postgres contradicts, any seat history that is not linearizable, or any
// map (watcher socket or a process's /seats) that has not caught up with
// Postgres 1 s after the load stops, or any process whose registry (hot
// cache, Redis, Postgres) does not agree 2 s after it, or, after a Postgres
// restart, any hold failing or the fast path still off 1 s after Postgres
// accepts connections again, or any waitlist entry offered twice, or any
// waitlist work not done 3 s after the load stops (see waitlistServed).
// Known engine bugs fail only in strict mode (see known_test.go).
func TestChaos(t *testing.T) {
	tm := timing{warm: 500 * time.Millisecond, fault: 2 * time.Second, after: 1500 * time.Millisecond,
		converge: time.Second, buyers: 24, hot: 6, watchersPerNode: 1, sections: 4, rows: 10, perRow: 25, ttl: 6 * time.Second,
		bestBuyers: 4, gaBuyers: 4, gaCapacity: 60, waitBuyers: 3}
	if *fullRun {
		tm = timing{warm: 3 * time.Second, fault: 8 * time.Second, after: 5 * time.Second,
			converge: time.Second, buyers: 48, hot: 8, watchersPerNode: 2, sections: 8, rows: 10, perRow: 25, ttl: 15 * time.Second,
			bestBuyers: 8, gaBuyers: 8, gaCapacity: 150, waitBuyers: 6}
	}
	e := &chaosEnv{t: t, reported: map[string]bool{}}
	opt := clusterOptions{nodes: 3, holdTTL: tm.ttl, sections: tm.sections, rows: tm.rows, perRow: tm.perRow, gaCapacity: tm.gaCapacity}
	if *fullRun {
		if pg, reason := startPrivatePG(t); pg != nil {
			e.pg = pg
			opt.pgURL = pg.url
		} else {
			t.Logf("postgres restart will be skipped: %s", reason)
		}
	}
	start := time.Now()
	e.c = newCluster(t, opt)
	tr := newTransport()
	e.l = newLoad(t, e.c, tr, tm.buyers, tm.hot)
	e.l.addChoosers(t, tr, viaBest, tm.bestBuyers)
	e.l.addChoosers(t, tr, viaGA, tm.gaBuyers)
	e.l.addChoosers(t, tr, viaWaitlist, tm.waitBuyers)
	watchUsers := testenv.AddBuyers(t, e.c.admin, e.c.tenant.Org.ID, tm.watchersPerNode*len(e.c.nodes))
	watchClients := loginAll(t, e.c, tr, watchUsers)
	e.reader = watchClients[0]
	e.org = e.c.organizer(t, tr)
	ws, stopWatchers, live := startWatchers(e.c, watchClients)
	t.Cleanup(stopWatchers)
	e.ws = ws
	if !live {
		t.Logf("the processes have no live socket route yet: watchers skipped, maps checked over HTTP only")
	}
	t.Logf("setup %s: %d processes, %d seats (%d hot), %d buyers (+%d best available, +%d GA on %d places, +%d in the waitlist for section %s), %d watchers, hold TTL %s, strict %v",
		time.Since(start).Round(time.Millisecond), len(e.c.nodes), len(e.c.seats), tm.hot, tm.buyers, tm.bestBuyers, tm.gaBuyers,
		len(e.c.gaPlaces), tm.waitBuyers, waitSection, len(ws), tm.ttl, strict())

	only, err := regexp.Compile(*onlyFault)
	if err != nil {
		t.Fatalf("-chaos.fault: %v", err)
	}
	var rows []*row
	for _, f := range faults {
		if !*fullRun && !f.short || !only.MatchString(f.name) {
			continue
		}
		r := &row{fault: f.name}
		rows = append(rows, r)
		if f.skip != nil {
			if r.skipped = f.skip(e); r.skipped != "" {
				continue
			}
		}
		runFault(e, f, r, tm)
	}

	e.finish(rows, start, live)
}

// finish checks linearizability over the whole run, prints the table and
// the figures, and reports every violation.
func (e *chaosEnv) finish(rows []*row, start time.Time, live bool) {
	t := e.t
	ws := e.ws
	// Linearizability over the whole run. Outside strict mode the known
	// stale 200s are taken out first (they are reported as such above):
	// what remains must linearize.
	ctx := context.Background()
	holds, err := e.c.holdRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ops := e.l.rec.all()
	checked := ops
	stale := 0
	if openBugs[bugStaleIdempotent] && !strict() {
		checked = nil
		for _, o := range ops {
			if staleIdempotent(o, holds) {
				stale++
				continue
			}
			checked = append(checked, o)
		}
	}
	vizDir, _ := os.MkdirTemp("", "seatd-chaos-lin-")
	rep := checkLinearizable(checked, holds, vizDir)
	if rep.VisualizationDir == "" {
		_ = os.RemoveAll(vizDir)
	}

	t.Logf("chaos table (%s, %s total):\n%s", map[bool]string{true: "full", false: "short"}[*fullRun],
		time.Since(start).Round(time.Second), table(rows))
	t.Logf("operations: %s", summarize(ops))
	if s := e.l.chosenSummary(); s != "" {
		t.Logf("requests choosing no seat (granted seats are in the operations above): %s", s)
	}
	for _, o := range e.l.bad {
		t.Errorf("%s request at %s via %s: %s", o.Via, o.Call.Format("15:04:05.000"), o.Node, o.Err)
	}
	t.Logf("linearizability (porcupine, one seat = one object, expiry modelled): %d seats, %d operations (%d unknown outcomes settled from postgres, %d known stale 200s set aside): %d not linearizable, %d undecided; %d seats with stale refusals (strict model, not a failure)",
		rep.Seats, rep.Ops, rep.Resolved, stale, len(rep.Illegal), rep.Unknown, rep.StaleRefusals)
	if live {
		var frames, sessions, restarts int64
		for _, w := range ws {
			frames += w.frames.Load()
			sessions += w.sessions.Load()
			restarts += w.closeCount(1012)
		}
		t.Logf("watchers: %d frames, %d socket sessions (%d closed with 1012)", frames, sessions, restarts)
	}

	known := map[string]int{}
	for _, r := range rows {
		for _, v := range r.violations {
			if v.tolerated() {
				known[v.bug]++
				continue
			}
			t.Errorf("%s: %s", r.fault, v)
		}
	}
	for _, bug := range slices.Sorted(maps.Keys(known)) {
		t.Logf("KNOWN ENGINE BUG %s: %d occurrences (open; fails with -chaos.strict / make chaos; see bugs_test.go)", bug, known[bug])
	}
	for i, seat := range rep.Illegal {
		if i == 3 {
			break
		}
		t.Errorf("seat %s history is not linearizable:%s", seat, describeSeat(checked, holds, seat))
	}
	if rep.VisualizationDir != "" {
		dumpHistory(t, filepath.Join(rep.VisualizationDir, "history.json"), ops, holds)
	}
	if len(rep.Illegal) > 0 {
		t.Errorf("%d seats not linearizable; porcupine visualizations in %s", len(rep.Illegal), rep.VisualizationDir)
	}
	if rep.Unknown > 0 {
		t.Logf("%d seat histories could not be decided in time", rep.Unknown)
	}
}

// runFault runs one row: warm load, fault, heal, recovery under load, then
// the load stops and everything is checked. The phases are lengths of
// time, not waits for a condition: how long the load runs warm, how long
// the fault lasts under it, how long it runs after the heal (-chaos.full
// makes each longer).
func runFault(e *chaosEnv, f fault, r *row, tm timing) {
	t := e.t
	ctx := context.Background()
	e.l.start()
	time.Sleep(tm.warm)
	tFault := time.Now()
	heal := f.inject(e)
	if f.redis {
		// Maps must keep moving during the fault: a seat may trail
		// Postgres, but not by more than a second.
		time.Sleep(tm.fault / 2)
		r.violations = append(r.violations, e.freshness(ctx, f)...)
		time.Sleep(time.Until(tFault.Add(tm.fault)))
	} else {
		time.Sleep(tm.fault)
	}
	tHeal := time.Now()
	heal()
	tBack := time.Now()
	r.healed = tBack.Sub(tHeal)
	r.faultFor = tHeal.Sub(tFault)
	if f.pg {
		e.pgFaults = append(e.pgFaults, window{tFault, time.Now().Add(time.Second)})
	}
	if f.after != nil {
		f.after(e, r)
	}
	fp := make(chan struct{})
	go func() {
		defer close(fp)
		_, r.fastPathPolls, r.fastPathErr = e.c.fastPath(ctx, e.reader, 30*time.Second)
		r.fastPath = time.Since(tBack)
	}()
	time.Sleep(tm.after)
	tQuiet := time.Now()
	e.l.stop()
	<-fp
	r.during = e.l.rec.stats(tFault, tBack)
	r.after = e.l.rec.stats(tBack, tQuiet)
	if f.backWithin > 0 {
		r.notes = append(r.notes, "fast path: "+r.fastPathPolls)
		if r.after.Errors > 0 && r.after.LastError.Sub(tBack) >= f.backWithin {
			r.violations = append(r.violations, violation{msg: fmt.Sprintf("holds still failed %s after the heal (%d failed since it: %v)",
				r.after.LastError.Sub(tBack).Round(time.Millisecond), r.after.Errors, r.after.ErrorKinds)})
		}
		if r.fastPathErr != nil || r.fastPath >= f.backWithin {
			r.violations = append(r.violations, violation{msg: fmt.Sprintf("fast path back only after %s (%v; %s)",
				r.fastPath.Round(time.Millisecond), r.fastPathErr, r.fastPathPolls)})
		}
	}

	holds, err := e.c.holdRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Maps first: the deadline runs from the moment the load stopped.
	r.converge, r.convergeErr = e.c.converge(ctx, e.ws, e.reader, tm.converge)
	var ce *convergeError
	if errors.As(r.convergeErr, &ce) {
		ops := e.l.rec.all()
		nviews := len(e.ws) + len(e.c.upNodes())
		var crash *crashInfo
		if f.crash {
			crash = &crashInfo{node: e.c.nodes[len(e.c.nodes)-1].name, at: tFault}
		}
		vs := classifyDiffs(ce.diffs, nviews, holds, ops, e.pgFaults, crash)
		for i, v := range vs {
			if old, ok := e.stuck[v.seat]; ok && old.version == v.version && v.bug == "" {
				v.bug = old.bug
			}
			if e.stuck == nil {
				e.stuck = map[uuid.UUID]violation{}
			}
			e.stuck[v.seat] = v
			v.msg = "map not converged after " + tm.converge.String() + ": " + v.msg
			r.violations = append(r.violations, v)
			if i < 2 {
				t.Logf("%s: %s", f.name, e.c.explainSeat(ctx, v.seat, e.ws, e.reader, ops, tFault.Add(-tm.warm)))
			}
		}
		// As long again, to tell "slow" from "stuck".
		if d, err := e.c.converge(ctx, e.ws, e.reader, 5*time.Second); err == nil {
			r.notes = append(r.notes, fmt.Sprintf("maps converged only after %s", (r.converge+d).Round(time.Millisecond)))
		} else {
			r.notes = append(r.notes, "maps still differ 5 s later")
		}
	}
	if e.org != nil {
		// Every process's registry must agree in every tier (hot cache =
		// Redis = Postgres) once the follower had a round or two.
		start, ok := time.Now(), false
		for deadline := start.Add(2 * time.Second); ; time.Sleep(100 * time.Millisecond) { // poll: the time taken is noted
			if ok = e.c.registryConsistent(ctx, e.org); ok || time.Now().After(deadline) {
				break
			}
		}
		note := e.c.registryNote(ctx, e.org)
		if ok && time.Since(start) > 150*time.Millisecond {
			note += fmt.Sprintf(" (after %s)", time.Since(start).Round(100*time.Millisecond))
		}
		r.notes = append(r.notes, note)
		if !ok {
			r.violations = append(r.violations, violation{msg: "registry not consistent 2 s after the load stopped: " + note})
		}
	}
	r.violations = append(r.violations, e.c.checkSQL(ctx)...)
	r.violations = append(r.violations, e.c.waitlistServed(ctx, 3*time.Second)...)
	for _, v := range checkAcks(e.l.rec.all(), holds) {
		if !e.reported[v.msg] {
			e.reported[v.msg] = true
			r.violations = append(r.violations, v)
		}
	}
	t.Logf("%-28s during: %d holds, %d granted, %d refused, %d errors, p99 %s; healed in %s; after: %d holds, %d errors%s, own ok %d/%d; fast path %s; maps %s %s",
		f.name, r.during.Holds, r.during.Granted, r.during.Taken, r.during.Errors, r.during.P99.Round(time.Millisecond),
		r.healed.Round(time.Millisecond), r.after.Holds, r.after.Errors, lastError(r.after, tBack), r.after.OwnGranted, r.after.OwnHolds,
		r.fastPath.Round(time.Millisecond), r.converge.Round(time.Millisecond), strings.Join(r.notes, "; "))
}

// freshness checks, with the load running, that no map is more than a
// second behind Postgres.
func (e *chaosEnv) freshness(ctx context.Context, f fault) []violation {
	before, err := e.c.pgSeats(ctx)
	if err != nil {
		return []violation{{msg: "freshness: " + err.Error()}}
	}
	time.Sleep(time.Second) // not a condition: the bound itself (a second behind at most)
	views, errs := e.c.views(ctx, e.ws, e.reader)
	var out []violation
	for _, m := range errs {
		out = append(out, violation{msg: "during the fault: " + m})
	}
	var diffs []seatDiff
	for _, v := range views {
		for id, want := range before {
			if got := v.seats[id]; got.Version < want.Version {
				diffs = append(diffs, seatDiff{view: v.name, node: v.node, seat: id, got: got, want: want})
			}
		}
	}
	if len(diffs) == 0 {
		return out
	}
	lagging := map[string]int{}
	onlyFirst := true
	for _, d := range diffs {
		lagging[d.view]++
		onlyFirst = onlyFirst && d.node == e.c.nodes[0].name
	}
	var names []string
	for _, v := range slices.Sorted(maps.Keys(lagging)) {
		names = append(names, fmt.Sprintf("%s (%d seats)", v, lagging[v]))
	}
	v := violation{msg: "during the fault, maps more than 1 s behind postgres: " + strings.Join(names, ", ")}
	if f.partial && onlyFirst {
		v.bug = bugPartitionFreeze
	}
	return append(out, v)
}

// lastError says when, after from, the last failed hold of s was made.
func lastError(s windowStats, from time.Time) string {
	if s.Errors == 0 {
		return ""
	}
	return fmt.Sprintf(" (the last made %s after the heal)", s.LastError.Sub(from).Round(time.Millisecond))
}

func pct(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
}

func table(rows []*row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %6s %9s %11s %6s %8s %8s %6s %9s %9s %9s  %s\n",
		"fault", "holds", "answered", "own ok", "errors", "p99", "healed", "errors", "p99 after", "fast path", "converge", "result")
	for _, r := range rows {
		if r.skipped != "" {
			fmt.Fprintf(&b, "%-28s skipped: %s\n", r.fault, r.skipped)
			continue
		}
		fp := r.fastPath.Round(time.Millisecond).String()
		if r.fastPathErr != nil {
			fp = "never"
		}
		conv := r.converge.Round(time.Millisecond).String()
		if r.convergeErr != nil {
			conv = "> " + r.converge.Round(time.Second).String()
		}
		known := map[string]int{}
		failed := 0
		for _, v := range r.violations {
			if v.tolerated() {
				known[v.bug]++
			} else {
				failed++
			}
		}
		var res []string
		if failed > 0 {
			res = append(res, fmt.Sprintf("FAIL: %d violations", failed))
		}
		for _, bug := range slices.Sorted(maps.Keys(known)) {
			res = append(res, fmt.Sprintf("known %s ×%d", bug, known[bug]))
		}
		if len(res) == 0 {
			res = append(res, "ok")
		}
		d := r.during
		fmt.Fprintf(&b, "%-28s %6d %9s %11s %6d %8s %8s %6d %9s %9s %9s  %s\n", r.fault, d.Holds, pct(d.Answered, d.Holds),
			fmt.Sprintf("%d/%d", d.OwnGranted, d.OwnHolds), d.Errors, d.P99.Round(time.Millisecond), r.healed.Round(time.Millisecond),
			r.after.Errors, r.after.P99.Round(time.Millisecond), fp, conv, strings.Join(res, "; "))
	}
	return b.String()
}
