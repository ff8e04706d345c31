// Package app assembles seatd from its parts — Postgres pool, Redis
// client, hold core, live bus, HTTP handler — and runs it. The seatd
// binary and the multi-process tests build servers the same way.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"seatd/internal/auth"
	"seatd/internal/bookingmail"
	"seatd/internal/config"
	"seatd/internal/door"
	"seatd/internal/hold"
	"seatd/internal/mail"
	"seatd/internal/notify"
	"seatd/internal/payment"
	"seatd/internal/pg"
	"seatd/internal/realtime"
	"seatd/internal/redisconn"
	"seatd/internal/seal"
	"seatd/internal/seatlock"
	"seatd/internal/store"
	"seatd/internal/telemetry"
	"seatd/internal/ticket"
	"seatd/internal/waitroom"
	"seatd/internal/webhook"
)

// App is one seatd process's wiring.
type App struct {
	Cfg      config.Config
	Log      *slog.Logger
	Pool     *pgxpool.Pool
	Redis    redisconn.Client
	Store    *store.Store
	Locks    *seatlock.Locks
	Bus      *realtime.Bus
	Accounts *auth.Accounts
	Registry *prometheus.Registry
	Metrics  *telemetry.Metrics
	// Webhooks sends the outbox's deliveries (one worker per process).
	Webhooks *webhook.Worker
	// Mail sends the mail outbox (one worker per process); nil without
	// SEATD_SMTP_URL.
	Mail *mail.Worker
	// TicketKeys signs and checks ticket codes with each event's key.
	TicketKeys *ticket.Keys
	// Door admits tickets (once each, also from offline scanners).
	Door *door.Door
	// BookingDetails reads bookings as their mail, page and PDF show them,
	// and keeps the queue of booking mail.
	BookingDetails *store.BookingMail
	// BookingMail writes the mail of bookings made and cancelled into the
	// outbox (one worker per process).
	BookingMail *bookingmail.Worker

	// Notifier is the process's one LISTEN connection: the bus's
	// fallback, the workers' wake-ups, the web server's session ends and
	// key revocations (RunBackground runs it first).
	Notifier *notify.Notifier

	// The hold core: one engine and the jobs around it (see package hold).
	Engine    *hold.Engine
	Holds     *hold.Holds
	BoxOffice *hold.BoxOffice
	Events    *hold.Events
	Waitlist  *hold.Waitlist
	Monitor   *hold.Monitor
	Follower  *hold.Follower
	Warmer    *hold.Warmer
	Reaper    *hold.Reaper
	// Payments takes buyers' payments and makes their bookings from the
	// provider's confirmations (its Run is the reconciler).
	Payments *hold.Payments

	// PaymentProvider is Stripe, or the embedded test provider (then
	// TestPayments too: its card page confirms through it; nil with
	// Stripe).
	PaymentProvider payment.Provider
	TestPayments    *payment.TestProvider

	// The waiting room (docs/waiting-room.md): the lines in Redis, the
	// automatic rate the holds' latency sets, and the admitter.
	Line     *waitroom.Line
	AutoRate *waitroom.AIMD
	Admitter *waitroom.Admitter

	holdPools []*pgxpool.Pool // the shared hold statements' and transactions' connections, when holds are shared
}

// New connects to Postgres and Redis and builds the hold core. It does not
// migrate; call Migrate for that.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*App, error) {
	pool, err := pg.Open(ctx, cfg.DatabaseURL, pg.Options{
		MaxConns: cfg.PGMaxConns, LockTimeout: cfg.PGLockTimeout, StatementTimeout: cfg.PGStatementTimeout, AppName: "seatd",
	})
	if err != nil {
		return nil, err
	}
	rdb, err := redisconn.Open(cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := telemetry.New(reg)
	a := &App{Cfg: cfg, Log: log, Pool: pool, Redis: rdb, Store: store.New(pool), Registry: reg, Metrics: m}
	a.Store.SetQuotas(store.Quotas{Charts: cfg.QuotaCharts, Events: cfg.QuotaEvents, APIKeys: cfg.QuotaAPIKeys,
		WebhookEndpoints: cfg.QuotaWebhooks, Invitations: cfg.QuotaInvitations})
	if cfg.TicketSecret != "" {
		// Webhook signing secrets are sealed under a key of their own
		// derived from the ticket secret (package seal). Without it
		// (production before it is set: serve refuses to start) endpoints
		// cannot be made, and Migrate leaves old secrets as they are.
		box, err := seal.New(cfg.TicketSecret, "seatd webhook secrets v1")
		if err != nil {
			pool.Close()
			_ = rdb.Close()
			return nil, fmt.Errorf("SEATD_TICKET_SECRET: %w", err)
		}
		a.Store.SetSealer(box)
	}
	a.Notifier = notify.New(pool.Config().ConnConfig, log.With("component", "notifier"))
	if cfg.HoldBatchMax > 1 {
		// The shared hold statements and the shared transactions get
		// connections of their own (see store.Holds.Batch): one for each
		// that may run at once.
		for range 2 {
			p, err := pg.Open(ctx, cfg.DatabaseURL, pg.Options{MaxConns: cfg.HoldBatchSlots,
				LockTimeout: cfg.PGLockTimeout, StatementTimeout: cfg.PGStatementTimeout, AppName: "seatd-holds"})
			if err != nil {
				a.closePools()
				_ = rdb.Close()
				return nil, err
			}
			a.holdPools = append(a.holdPools, p)
		}
		a.Store.Holds.Batch(cfg.HoldBatchSlots, cfg.HoldBatchMax, a.holdPools[0], a.holdPools[1])
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seatd_hold_batch_statements_total",
			Help: "Coalesced hold statements sent to Postgres."},
			func() float64 { n, _ := a.Store.Holds.BatchStats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seatd_hold_batch_rows_total",
			Help: "Holds carried by coalesced hold statements."},
			func() float64 { _, n := a.Store.Holds.BatchStats(); return float64(n) }),
		telemetry.NewPoolCollector("main", pool.Stat),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seatd_reaper_interval_seconds",
			Help: "How often the reaper runs (SEATD_REAPER_INTERVAL); alerts measure stalls against it."},
			func() float64 { return cfg.ReaperInterval.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seatd_redis_unsynced_events",
			Help: "Cached events whose Redis locks are not synced with Postgres; holds on them take the Postgres-only path."},
			func() float64 { return float64(a.Engine.UnsyncedEvents()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seatd_hot_cache_events",
			Help: "Events in this process's hot cache (idle ones leave after SEATD_CACHE_IDLE)."},
			func() float64 { return float64(a.Engine.CachedEvents()) }))
	for i, name := range []string{"hold_statements", "hold_transactions"}[:len(a.holdPools)] {
		reg.MustRegister(telemetry.NewPoolCollector(name, a.holdPools[i].Stat))
	}
	a.Locks = seatlock.New(rdb, cfg.KeyPrefix, cfg.LockMargin)
	a.Locks.Coalesce(cfg.HoldBatchSlots, cfg.HoldBatchMax)
	var eng *hold.Engine
	a.AutoRate = waitroom.NewAIMD(m.HoldDuration, waitroom.AIMDOptions{Target: cfg.QueueHoldTarget, Redis: rdb, KeyPrefix: cfg.KeyPrefix})
	a.Bus = realtime.New(rdb, pool, a.Notifier, log, func() bool { return eng == nil || eng.FastPath() })
	eng = hold.NewEngine(a.Store, a.Locks, a.Bus, hold.Options{
		HoldTTL: cfg.HoldTTL, Extension: cfg.HoldExtension, MaxExtensions: cfg.MaxExtensions,
		MaxHoldsPerBuyer: cfg.MaxHoldsPerBuyer, MaxSeatsPerRequest: cfg.MaxSeatsPerRequest,
		ReaperBatch: cfg.ReaperBatch, BreakerFailures: cfg.BreakerFailures, BreakerOpenFor: cfg.BreakerOpenFor,
		// A transaction cannot outlive two statement timeouts (lock
		// check, then write); a lock older than that with no hold in
		// Postgres belongs to nobody.
		StaleLockAge: 2*cfg.PGStatementTimeout + time.Second,
		CacheIdle:    cfg.CacheIdle,
		OfferTTL:     cfg.WaitlistOfferTTL,
		BuyersPay:    cfg.BuyersPay(),
		// The background jobs' pace (RunBackground starts them).
		FeedEvery: cfg.FeedInterval, ReapEvery: cfg.ReaperInterval, OfferEvery: cfg.WaitlistInterval,
		SnapshotEvery: cfg.SnapshotInterval, WarmEvery: cfg.WarmInterval, WarmEvents: cfg.WarmEvents, WarmSeats: cfg.WarmSeats,
	}, log, m, time.Now)
	a.Engine = eng
	a.Warmer = hold.NewWarmer(eng)
	a.Follower = hold.NewFollower(eng, a.Warmer)
	a.Holds = hold.NewHolds(eng)
	a.BoxOffice = hold.NewBoxOffice(eng)
	a.Events = hold.NewEvents(eng, a.Warmer)
	a.Waitlist = hold.NewWaitlist(eng, a.Notifier)
	a.Monitor = hold.NewMonitor(eng, a.Follower)
	a.Reaper = hold.NewReaper(eng)
	a.newWaitroom()
	cost := 0
	if cfg.Env == "test" {
		cost = 4 // bcrypt.MinCost: tests create many users
	}
	a.Accounts = auth.New(a.Store.Accounts, a.Store.Tokens, cost, cfg.PublicURL)
	a.Accounts.LimitHashing(cfg.MaxPasswordHashes)
	a.Accounts.SetInviteFor(cfg.InviteFor)
	a.Webhooks = webhook.NewWorker(a.Store.Webhooks, a.Notifier, webhook.Options{
		AllowPrivate: cfg.WebhookAllowPrivate, Timeout: cfg.WebhookTimeout, RetryFor: cfg.WebhookRetryFor,
		Backoff: cfg.WebhookBackoff, BackoffMax: cfg.WebhookBackoffMax, Poll: cfg.WebhookPoll,
		Batch: 4 * cfg.WebhookConcurrency, Concurrency: cfg.WebhookConcurrency, Keep: 30 * 24 * time.Hour,
		// Attempts to failing endpoints, apart from the batches: a quarter
		// of the batch's at most.
		Probes: max(1, cfg.WebhookConcurrency/4),
	}, log.With("component", "webhooks"), telemetry.NewWebhooks(reg, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := a.Store.Webhooks.OutboxDepth(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	}))
	if err := a.newMail(); err != nil {
		a.Close()
		return nil, err
	}
	if a.TicketKeys, err = ticket.NewKeys(store.NewTicketKeys(a.Pool), cfg.TicketSecret); err != nil {
		a.Close()
		return nil, err
	}
	checkins := store.NewCheckins(a.Pool)
	a.Door = door.New(checkins, a.TicketKeys, a.Redis, door.Options{KeyPrefix: cfg.KeyPrefix, Live: a.Bus})
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seatd_checkin_statements_total",
			Help: "Admission statements the door's scans went to Postgres in."},
			func() float64 { n, _ := checkins.BatchStats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seatd_checkin_scans_total",
			Help: "Scans carried by admission statements (not those the recent-scan cache answered)."},
			func() float64 { _, n := checkins.BatchStats(); return float64(n) }))
	a.BookingDetails = store.NewBookingMail(a.Pool)
	a.BookingMail = bookingmail.New(a.BookingDetails, a.TicketKeys, a.Notifier,
		bookingmail.Options{PublicURL: cfg.PublicURL, Poll: cfg.MailPoll}, log.With("component", "bookingmail"))
	if err := a.newPayments(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// Migrate applies pending migrations, then seals the webhook secrets
// still kept in the clear (stored before migration 036, which SQL alone
// cannot seal).
func (a *App) Migrate(ctx context.Context) error {
	from, to, err := pg.Migrate(ctx, a.Pool)
	if err != nil {
		return err
	}
	if from != to {
		a.Log.Info("migrated", "from", from, "to", to)
	}
	if a.Cfg.TicketSecret == "" {
		a.Log.Warn("webhook signing secrets stored before migration 036 stay in the clear until SEATD_TICKET_SECRET is set")
		return nil
	}
	n, err := a.Store.Webhooks.SealClearSecrets(ctx)
	if n > 0 {
		a.Log.Info("sealed webhook signing secrets", "count", n)
	}
	return err
}

// Job is a background loop: Run returns once ctx ends.
type Job interface{ Run(ctx context.Context) }

// JobFunc makes a function a Job.
type JobFunc func(ctx context.Context)

// Run calls f.
func (f JobFunc) Run(ctx context.Context) { f(ctx) }

// jobs are the process's own background loops, in the order they start;
// they stop in the reverse order.
//
//  1. The notifier: every job after it hears Postgres through it, and
//     asks for its channels as it starts (the notifier LISTENs to them on
//     its live connection, then tells the job it is ready). It stops last,
//     once nobody listens.
//  2. The follower: it keeps the hot caches and Redis in line with the
//     change feed, every FeedInterval while an event is cached (a change
//     whose delta was lost reaches every cache, map and Redis within an
//     interval plus one read), and at once when asked; the jobs after it
//     wake it when they changed seats.
//  3. The reaper, every ReaperInterval.
//  4. Occupancy snapshots, every SnapshotInterval.
//  5. The waitlist offer worker: on the notifier, with a WaitlistInterval
//     backstop.
//  6. The webhook worker: on the notifier, with a WebhookPoll backstop.
//  7. The waiting room's admitter, every second: the process holding an
//     event's lease in Redis admits its line (docs/waiting-room.md).
//  8. The booking mail worker: on the notifier, with a MailPoll backstop;
//     it writes into the outbox the next job sends.
//  9. The mail worker (with SEATD_SMTP_URL set): on the notifier, with a
//     MailPoll backstop.
//  10. The payment reconciler, every PaymentReconcileEvery: it asks the
//     provider about payments without news and sends refunds again, and
//     applies the answers as webhooks are applied (docs/payments.md).
//  11. The test provider's deliveries (without Stripe keys): a delayed
//     card's confirmation and failed sends, to this process's own webhook
//     endpoint.
//  12. The warmer (warm: only when serving, and with WarmEvents set): on
//     the bus, with a WarmInterval backstop.
//
// What RunBackground is given (the web server's jobs) starts after them
// all and stops first.
func (a *App) jobs(warm bool) []Job {
	js := []Job{a.Notifier, a.Follower, a.Reaper, a.Monitor, a.Waitlist, a.Webhooks, a.Admitter, a.BookingMail}
	if a.Mail != nil {
		js = append(js, a.Mail)
	}
	js = append(js, a.Payments)
	if a.TestPayments != nil {
		js = append(js, a.TestPayments)
	}
	if warm && a.Cfg.WarmEvents > 0 {
		// Load on-sale events while the listener opens, and those another
		// process publishes later, so the first buyers of a sale do not
		// wait for every seat to load (their holds wait on that load only
		// if they come first).
		js = append(js, a.Warmer)
	}
	return js
}

// RunBackground runs the process's background loops (see jobs) and then
// extra until ctx ends, and returns once they all stopped.
func (a *App) RunBackground(ctx context.Context, extra ...Job) {
	runJobs(ctx, append(a.jobs(false), extra...))
}

// runJobs starts jobs in order, each on a goroutine of its own, and once
// ctx ends stops them in reverse order: a job is stopped, and has
// returned, before the one started before it is stopped.
func runJobs(ctx context.Context, jobs []Job) {
	stops := make([]func(), len(jobs))
	for i, j := range jobs {
		jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			j.Run(jctx)
		}()
		stops[i] = func() { cancel(); <-done }
	}
	<-ctx.Done()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// Serve runs handler on the configured address with the background loops
// (see jobs, then the given jobs: the web server's) until ctx ends, then
// shuts down in order: stop accepting HTTP and finish requests, run
// onShutdown (closing sockets), stop the loops in reverse order. Close
// then closes Redis and the pool.
func (a *App) Serve(ctx context.Context, ln net.Listener, handler http.Handler, onShutdown func(), jobs ...Job) error {
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn),
	}
	bgCtx, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		runJobs(bgCtx, append(a.jobs(true), jobs...))
	}()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	a.Log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), a.Cfg.ShutdownTimeout)
	defer cancel()
	// Sockets are hijacked, so Shutdown does not wait for them: they are
	// closed once no new one can be upgraded, while the core and its loops
	// still run to tell them the last changes.
	err := srv.Shutdown(shutCtx)
	if onShutdown != nil {
		onShutdown()
	}
	stopBg()
	<-bgDone
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return errors.Join(serveErr, err)
}

// Close releases connections: the engine's subscriptions (once its own
// background work finished), the bus's, Redis, the pool.
func (a *App) Close() {
	a.Engine.Close()
	a.Bus.Close()
	_ = a.Redis.Close()
	a.closePools()
}

func (a *App) closePools() {
	for _, p := range a.holdPools {
		p.Close()
	}
	a.Pool.Close()
}
