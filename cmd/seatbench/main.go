// Command seatbench is seatd's load generator (make bench, make
// bench-quick). It brings up the bench Postgres and Redis
// (scripts/services.sh up bench), builds seatd, starts `seatd serve`
// processes on loopback ports, creates the organization, users and events
// it needs, and measures the targets of docs/performance.md against
// references run in the same invocation (pgbench doing the hold
// transaction):
//
//   - distinct-seat holds through the HTTP API at several buyer counts,
//     next to pgbench running the same hold statement at a comparable
//     client count;
//   - the same with Redis unreachable (the Postgres-only fallback path);
//   - 1 000 buyers racing for one seat;
//   - live fan-out of a hold to thousands of WebSocket clients, and the
//     memory each costs the server;
//   - the time from held_until to the "available" frame on an open map;
//   - occupancy of a 100 000-seat event, served and recomputed;
//   - importing a 100 000-seat venue chart as JSON and as CSV;
//   - hold throughput spread over two and three processes;
//   - a freed seat to the offer in the next waiting buyer's cart;
//   - the door: check-ins, and a sale to its confirmation mail;
//   - a waiting room with 100 000 visitors in line on one process;
//   - a flash sale paid through the built-in test payment provider,
//     against the same sale without payment;
//   - a surge of sign-ins, with the holds it must not starve;
//   - the seat map of a 100 000-seat event in headless Chromium.
//
// It prints one table on stdout, progress on stderr, and writes the
// figures as JSON to bench/results/latest.json and the table beside it in
// latest.txt. Every phase is bounded in time and count; every process it
// starts is stopped by PID before it exits.
//
// Three commands read result files instead of running anything:
// `seatbench table FILE` prints a file's table, `seatbench compare A B`
// prints two files side by side with B/A for every figure they share, and
// `seatbench perf-doc` renders docs/performance.md from latest.json.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"seatd/internal/auth"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "seatbench:", err)
		os.Exit(1)
	}
}

// config is every knob of a run. Defaults are the full size; -quick
// swaps in the small ones before the other flags apply.
type config struct {
	quick   bool
	root    string // repository root (holds go.mod)
	outDir  string
	seatd   string // prebuilt seatd binary; empty: build one
	only    map[string]bool
	timeout time.Duration

	levels        []int         // concurrent buyers for the distinct-seat runs
	duration      time.Duration // measured window per level
	warmup        time.Duration // unmeasured lead-in per level
	eventSeats    int           // seats of each generated hold event
	refSeats      int           // seats of each pgbench event
	refMaxConns   int           // pgbench clients at most (Postgres max_connections is 300)
	noRef         bool          // skip pgbench (for comparing seatd builds)
	fallback      []int         // buyer counts for the Postgres-only path
	hotBuyers     int
	bestBursts    int // best-available bursts, each on a fresh event
	bestKeyed     int // keyed best-available bursts, between the plain ones
	gaBuyers      int
	gaKeyed       bool // the GA flash sale again with an Idempotency-Key on every request
	wsClients     int
	wsHolds       int
	wsSessions    int           // distinct sessions the WebSocket clients share
	wsFlash       time.Duration // the flash run on the live sockets
	wsFlashRate   int           // its holds a second
	expiryHolds   int
	waitlistFrees int // seats freed one at a time to waiting buyers
	doorTickets   int // tickets sold, ten a booking, then scanned at the door
	doorScanners  int // concurrent scanners (and reference clients)
	doorMailSales int // sales paced one at a time and timed to their mail
	occSeats      int
	chartSeats    int // seats of the imported chart
	occRequests   int
	multiProcs    []int
	multiBuyers   int
	openingSeats  int     // seats of the opening phase's event
	openingBuyers int     // buyers with open connections in the opening phase
	pacedBuyers   int     // buyers of the paced (open-loop) latency run; 0: none
	pacedRate     float64 // offered holds/s; 0: 2 per buyer, at most half the closed-loop rate at pacedBuyers
	pgMaxConns    int     // SEATD_PG_MAX_CONNS for every seatd; 0 leaves seatd's default

	roomVisitors int           // visitors waiting in one event's line (room phase)
	roomRate     int           // the room's admissions a minute
	roomSeats    int           // seats of the room's event
	roomPoll     time.Duration // the visitors' polling window (after the opening)
	roomHolds    time.Duration // the admitted buyers' holds window, while the line polls
	roomRef      time.Duration // the polling schedule replayed with GET /api/v1/me, at most this long
	payBuyers    int           // concurrent buyers of the payments phase's sales
	paySales     int           // sales of each payments run (with and without payment)
	signIns      int           // sign-ins of the surge
	signInSlots  []int         // hashing slots of the surge's processes, one surge each
	tailEvents   int           // big events cached in the tail phase's process
	tailSeats    int           // seats of each
	tailFor      time.Duration // the tail phase's measured window
	tailTrace    bool          // a second window under a runtime trace

	webhookRate   float64       // changes/s of the webhook latency run
	webhookOutage time.Duration // how long the webhook receiver is down
	seatdEnv      map[string]string

	freshDB      bool
	keepServices bool
	profileLevel int           // grab a CPU profile at this buyer count (from its ops listener)
	profileFor   time.Duration // length of that profile
	profilePay   bool          // grab a CPU profile of each sale run of the payments phase
	profileRoom  bool          // grab a CPU profile of the waiting room's holds window, while the line polls
	profileMulti bool          // grab a CPU profile of one process of the run behind haproxy
}

// phases, in the order they run.
var allPhases = []string{"idle", "opening", "holds", "tail", "hotseat", "best", "occupancy", "charts", "multi", "fallback", "live", "expiry", "webhooks", "ga", "waitlist", "door", "room", "pay", "signin", "bigmap"}

func parseConfig(args []string, stderr io.Writer) (config, error) {
	quick := false
	for _, a := range args {
		if a == "-quick" || a == "--quick" || a == "-quick=true" || a == "--quick=true" {
			quick = true
		}
	}
	// A full run's phases take 15–18 minutes on two cores; the bound
	// leaves a slower machine room.
	c := config{
		quick: quick, root: ".", outDir: "bench/results", timeout: 28 * time.Minute,
		levels: []int{50, 200, 500}, duration: 15 * time.Second, warmup: 3 * time.Second,
		eventSeats: 200_000, refSeats: 200_000, refMaxConns: 200,
		fallback: []int{50, 200, 500}, hotBuyers: 1000, gaBuyers: 200, gaKeyed: true, bestBursts: 15, bestKeyed: 5,
		wsClients: 5000, wsHolds: 30, wsSessions: 100, wsFlash: 5 * time.Second, wsFlashRate: 300, expiryHolds: 40, waitlistFrees: 40,
		doorTickets: 2000, doorScanners: 16, doorMailSales: 30,
		occSeats: 100_000, occRequests: 1000, chartSeats: 100_000,
		multiProcs: []int{2, 3}, multiBuyers: 200, pacedBuyers: 200,
		openingSeats: 300_000, openingBuyers: 32,
		freshDB: true, profileFor: 10 * time.Second,
		webhookRate: 1000, webhookOutage: 60 * time.Second,
		roomVisitors: 100_000, roomRate: 3000, roomSeats: 100_000,
		roomPoll: 42 * time.Second, roomHolds: 15 * time.Second, roomRef: 20 * time.Second,
		payBuyers: 200, paySales: 2000, signIns: 1000,
		tailEvents: 4, tailSeats: 300_000, tailFor: 60 * time.Second,
		signInSlots: signInSlots(),
	}
	if quick {
		c.timeout = 300 * time.Second
		c.duration, c.warmup = 4*time.Second, time.Second
		c.eventSeats, c.refSeats = 40_000, 60_000
		c.fallback = []int{200}
		c.wsClients, c.wsHolds, c.wsSessions = 1000, 10, 20
		c.expiryHolds = 10
		c.bestBursts, c.bestKeyed = 2, 1
		c.waitlistFrees = 10
		c.doorTickets, c.doorMailSales = 500, 10
		c.occRequests = 300
		c.openingSeats = 100_000
		c.webhookOutage = 10 * time.Second
		c.roomVisitors, c.roomRate, c.roomSeats = 5000, 1200, 20_000
		c.roomPoll, c.roomHolds, c.roomRef = 8*time.Second, 4*time.Second, 8*time.Second
		c.payBuyers, c.paySales, c.signIns = 50, 300, 100
		c.tailEvents, c.tailSeats, c.tailFor = 3, 100_000, 10*time.Second
	}
	fs := flag.NewFlagSet("seatbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("quick", quick, "small sizes: every measurement, well under 3 minutes")
	fs.StringVar(&c.root, "root", c.root, "repository root (where go.mod is)")
	fs.StringVar(&c.outDir, "out", c.outDir, "directory for <timestamp>.json and latest.json")
	fs.StringVar(&c.seatd, "seatd", "", "use this seatd binary instead of building ./cmd/seatd")
	only := fs.String("only", "", "run only these phases (comma-separated: "+strings.Join(allPhases, ",")+")")
	fs.DurationVar(&c.timeout, "timeout", c.timeout, "hard limit for the phases (services, build, accounts and installs come before it)")
	levels := fs.String("levels", joinInts(c.levels), "concurrent buyers of the distinct-seat runs")
	fs.DurationVar(&c.duration, "duration", c.duration, "measured window of each load level")
	fs.DurationVar(&c.warmup, "warmup", c.warmup, "unmeasured lead-in of each load level")
	fs.IntVar(&c.eventSeats, "event-seats", c.eventSeats, "seats of each generated event for HTTP hold runs")
	fs.IntVar(&c.refSeats, "ref-seats", c.refSeats, "seats of each generated event for pgbench runs")
	fs.IntVar(&c.refMaxConns, "ref-max-clients", c.refMaxConns, "pgbench client count cap (Postgres max_connections is 300)")
	fs.BoolVar(&c.noRef, "no-ref", false, "skip the pgbench references (for comparing seatd builds quickly)")
	fallback := fs.String("fallback-levels", joinInts(c.fallback), "concurrent buyers of the Postgres-only runs")
	fs.IntVar(&c.hotBuyers, "hot-buyers", c.hotBuyers, "buyers racing for one seat")
	fs.IntVar(&c.bestBursts, "best-bursts", c.bestBursts, "best-available bursts, each on a fresh event (the median one is reported)")
	fs.IntVar(&c.bestKeyed, "best-keyed", c.bestKeyed, "best-available bursts with an Idempotency-Key on every request, run between the plain ones and then sent again (0: none)")
	fs.IntVar(&c.gaBuyers, "ga-buyers", c.gaBuyers, "buyers of the GA flash sale (10 000 places)")
	fs.BoolVar(&c.gaKeyed, "ga-keyed", c.gaKeyed, "run the GA flash sale again with an Idempotency-Key on every request, then send its granted requests again")
	fs.IntVar(&c.wsClients, "ws-clients", c.wsClients, "WebSocket clients watching one event")
	fs.IntVar(&c.wsHolds, "ws-holds", c.wsHolds, "holds whose fan-out is timed")
	fs.IntVar(&c.wsSessions, "ws-sessions", c.wsSessions, "buyer sessions the WebSocket clients share")
	fs.DurationVar(&c.wsFlash, "ws-flash", c.wsFlash, "the live sockets' flash run: holds at a sale's pace for this long")
	fs.IntVar(&c.wsFlashRate, "ws-flash-rate", c.wsFlashRate, "holds a second of the live sockets' flash run")
	fs.IntVar(&c.expiryHolds, "expiry-holds", c.expiryHolds, "2-second holds whose expiry is timed")
	fs.IntVar(&c.waitlistFrees, "waitlist-frees", c.waitlistFrees, "seats freed one at a time to waiting buyers")
	fs.IntVar(&c.doorTickets, "door-tickets", c.doorTickets, "tickets sold (ten a booking) and scanned at the door")
	fs.IntVar(&c.doorScanners, "door-scanners", c.doorScanners, "concurrent door scanners")
	fs.IntVar(&c.doorMailSales, "door-mail-sales", c.doorMailSales, "sales timed one at a time to their confirmation mail")
	fs.IntVar(&c.roomVisitors, "room-visitors", c.roomVisitors, "visitors waiting in one event's line")
	fs.IntVar(&c.roomRate, "room-rate", c.roomRate, "the waiting room's admissions a minute")
	fs.IntVar(&c.roomSeats, "room-seats", c.roomSeats, "seats of the waiting room's event")
	fs.DurationVar(&c.roomPoll, "room-poll", c.roomPoll, "the visitors' polling window after the opening")
	fs.DurationVar(&c.roomHolds, "room-holds", c.roomHolds, "measured window of the admitted buyers' holds while the line polls (and without it)")
	fs.DurationVar(&c.roomRef, "room-ref", c.roomRef, "the polling schedule replayed with GET /api/v1/me, at most this long")
	fs.IntVar(&c.payBuyers, "pay-buyers", c.payBuyers, "concurrent buyers of the sales with and without payment")
	fs.IntVar(&c.paySales, "pay-sales", c.paySales, "sales (two seats each) with payment, and as many without")
	fs.IntVar(&c.signIns, "sign-ins", c.signIns, "sign-ins of the surge (32 at a time)")
	fs.IntVar(&c.tailEvents, "tail-events", c.tailEvents, "big events cached in the tail phase's process")
	fs.IntVar(&c.tailSeats, "tail-seats", c.tailSeats, "seats of each of the tail phase's events")
	fs.DurationVar(&c.tailFor, "tail-for", c.tailFor, "the tail phase's measured window")
	fs.BoolVar(&c.tailTrace, "tail-trace", c.tailTrace, "run the tail phase's window again under a runtime trace (saved in -out)")
	fs.IntVar(&c.occSeats, "occupancy-seats", c.occSeats, "seats of the occupancy event")
	fs.IntVar(&c.chartSeats, "chart-seats", c.chartSeats, "seats of the imported venue chart")
	fs.IntVar(&c.occRequests, "occupancy-requests", c.occRequests, "occupancy requests timed")
	procs := fs.String("procs", joinInts(c.multiProcs), "process counts of the multi-process runs")
	slots := fs.String("sign-in-slots", joinInts(c.signInSlots), "password-hashing slots of the sign-in surges, one surge each (the shipped default among them)")
	fs.IntVar(&c.multiBuyers, "multi-buyers", c.multiBuyers, "concurrent buyers of the multi-process runs")
	fs.IntVar(&c.openingSeats, "opening-seats", c.openingSeats, "seats of the event whose sale opens (opening phase)")
	fs.IntVar(&c.openingBuyers, "opening-buyers", c.openingBuyers, "buyers, each with an open connection, in the opening phase")
	fs.IntVar(&c.pacedBuyers, "paced-buyers", c.pacedBuyers, "buyers of the paced latency run (0: skip it)")
	fs.Float64Var(&c.pacedRate, "paced-rate", 0, "holds/s offered in the paced run (0: two per buyer per second, at most half the closed-loop rate)")
	fs.IntVar(&c.pgMaxConns, "pg-max-conns", 0, "SEATD_PG_MAX_CONNS for every seatd (0: seatd's default)")
	env := fs.String("seatd-env", "", "extra environment for every seatd, comma-separated KEY=VALUE (for experiments)")
	fs.BoolVar(&c.freshDB, "fresh-db", c.freshDB, "drop and recreate the bench database and flush the bench Redis first")
	fs.BoolVar(&c.keepServices, "keep-services", false, "leave the bench Postgres and Redis running at the end")
	fs.IntVar(&c.profileLevel, "profile-level", 0, "fetch a CPU profile from the ops listener during the fast-path run at this buyer count")
	fs.DurationVar(&c.profileFor, "profile-for", c.profileFor, "length of that CPU profile")
	fs.BoolVar(&c.profilePay, "profile-pay", false, "fetch a CPU profile (-profile-for long) from the ops listener of each sale run of the payments phase")
	fs.BoolVar(&c.profileRoom, "profile-room", false, "fetch a CPU profile (-profile-for long) from the ops listener during the waiting room's holds window, while the line polls")
	fs.BoolVar(&c.profileMulti, "profile-multi", false, "fetch a CPU profile (-profile-for long) from the ops listener of one process during the run behind haproxy")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if c.levels, err = parseInts(*levels); err != nil {
		return c, fmt.Errorf("-levels: %w", err)
	}
	if c.fallback, err = parseInts(*fallback); err != nil {
		return c, fmt.Errorf("-fallback-levels: %w", err)
	}
	if c.multiProcs, err = parseInts(*procs); err != nil {
		return c, fmt.Errorf("-procs: %w", err)
	}
	if c.signInSlots, err = parseInts(*slots); err != nil {
		return c, fmt.Errorf("-sign-in-slots: %w", err)
	}
	c.seatdEnv = map[string]string{}
	for _, kv := range strings.Split(*env, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, "SEATD_") {
			return c, fmt.Errorf("-seatd-env: %q is not SEATD_NAME=value", kv)
		}
		c.seatdEnv[k] = v
	}
	c.only = map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !contains(allPhases, p) {
			return c, fmt.Errorf("-only: unknown phase %q (want %s)", p, strings.Join(allPhases, ", "))
		}
		c.only[p] = true
	}
	if c.duration <= 0 || c.warmup < 0 || c.hotBuyers < 2 || c.bestBursts < 1 || c.bestKeyed < 0 || c.wsClients < 1 || c.wsSessions < 1 ||
		c.roomVisitors < 1 || c.roomRate < 1 || c.roomSeats < 1 || c.roomPoll <= 0 || c.roomHolds <= 0 || c.roomRef <= 0 ||
		c.payBuyers < 1 || c.paySales < 1 || c.signIns < 1 || c.tailEvents < 1 || c.tailSeats < 64 || c.tailFor <= 0 {
		return c, fmt.Errorf("sizes must be positive")
	}
	return c, nil
}

func (c config) runs(phase string) bool { return len(c.only) == 0 || c.only[phase] }

// buyersNeeded is how many buyer accounts (and sessions) the run needs.
func (c config) buyersNeeded() int {
	n := max(c.hotBuyers, c.gaBuyers)
	for _, l := range append(append(append([]int{}, c.levels...), c.fallback...), c.multiBuyers, c.pacedBuyers, c.openingBuyers, c.payBuyers, c.wsSessions+1, 2*c.waitlistFrees, (c.doorTickets+9)/10) {
		n = max(n, l)
	}
	return n
}

// batchSlots is how many hold statements seatd runs at once
// (SEATD_HOLD_BATCH_SLOTS, default 2).
func (c config) batchSlots() int {
	if n, err := strconv.Atoi(c.seatdEnv["SEATD_HOLD_BATCH_SLOTS"]); err == nil && n > 0 {
		return n
	}
	return 2
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if cmd, ok := resultCommands[args[0]]; ok {
			return cmd(args[1:], stdout, stderr)
		}
	}
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, log: newProgress(stderr), rep: &Report{Started: time.Now().UTC(), Mode: mode(cfg.quick)}}
	defer b.cleanup()
	// Services, the seatd build, the accounts and any tool a phase
	// installs come before the clock: -timeout bounds the phases, so a
	// slow first build or a package download cannot leave phases
	// unmeasured.
	setupCtx, setupDone := context.WithTimeoutCause(ctx, setupTimeout, fmt.Errorf("setup exceeded %s", setupTimeout))
	err = b.setup(setupCtx)
	if err == nil {
		b.installTools(setupCtx)
	}
	setupDone()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.timeout, fmt.Errorf("run exceeded -timeout %s", cfg.timeout))
	defer cancel()
	phases := map[string]func(context.Context) error{
		"idle": b.phaseIdle, "opening": b.phaseOpening, "holds": b.phaseHolds, "tail": b.phaseTail, "hotseat": b.phaseHotSeat, "best": b.phaseBest, "occupancy": b.phaseOccupancy, "charts": b.phaseCharts, "multi": b.phaseMulti,
		"fallback": b.phaseFallback, "live": b.phaseLive, "expiry": b.phaseExpiry, "webhooks": b.phaseWebhooks, "ga": b.phaseGA, "waitlist": b.phaseWaitlist,
		"door": b.phaseDoor, "room": b.phaseRoom, "pay": b.phasePay, "signin": b.phaseSignIn, "bigmap": b.phaseBigMap,
	}
	for _, p := range allPhases {
		if !cfg.runs(p) {
			continue
		}
		if ctx.Err() != nil {
			b.rep.failed(p, context.Cause(ctx))
			continue
		}
		b.log.printf("== %s", p)
		start := time.Now()
		if err := phases[p](ctx); err != nil {
			b.log.printf("%s failed: %v", p, err)
			b.rep.failed(p, err)
		}
		b.log.printf("%s done in %s", p, time.Since(start).Round(100*time.Millisecond))
	}
	b.rep.Finished = time.Now().UTC()
	b.rep.Seconds = b.rep.Finished.Sub(b.rep.Started).Seconds()
	b.rep.evaluate()
	b.rep.printTable(stdout)
	path, err := b.rep.write(cfg.outDir)
	if err != nil {
		return err
	}
	b.log.printf("wrote %s", path)
	if n := len(b.rep.Errors); n > 0 {
		// The figures that were measured are written all the same; the
		// run fails so that a phase never goes unmeasured unnoticed.
		return fmt.Errorf("%d phase(s) not measured, first %s: %s", n, b.rep.Errors[0].Phase, b.rep.Errors[0].Error)
	}
	return nil
}

// setupTimeout bounds what comes before the phases' clock: the services,
// building seatd, the accounts, installing haproxy and Chromium.
const setupTimeout = 15 * time.Minute

// installTools runs the scripts that install haproxy (multi) and
// Chromium (bigmap) when missing, for the phases that need them; a
// failure is left for the phase to report.
func (b *bench) installTools(ctx context.Context) {
	if b.cfg.runs("multi") {
		if err := exec.CommandContext(ctx, filepath.Join(b.root, "scripts/haproxy.sh")).Run(); err != nil {
			b.log.printf("scripts/haproxy.sh: %v (the multi phase will say)", err)
		}
	}
	if b.cfg.runs("bigmap") {
		if _, err := chromiumPath(ctx, b.root); err != nil {
			b.log.printf("%v (the bigmap phase will say)", err)
		}
	}
}

func mode(quick bool) string {
	if quick {
		return "quick"
	}
	return "full"
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// signInSlots are the hashing slots the surge is measured with: one, a
// slot per core, two per core, and the shipped default.
func signInSlots() []int {
	n := runtime.NumCPU()
	out := []int{1, n, 2 * n, auth.DefaultHashing()}
	slices.Sort(out)
	return slices.Compact(out)
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
