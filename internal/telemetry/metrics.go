// Package telemetry defines seatd's Prometheus metrics. Metrics live in a
// struct registered on an injected registry, so tests get their own.
package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the hold engine's counters and histograms, named after the
// seat-hold telemetry events (attempt, success, conflict, fallback, ...).
type Metrics struct {
	HoldAttempt   prometheus.Counter
	HoldSuccess   *prometheus.CounterVec // path: fast | fallback | idempotent
	HoldConflict  *prometheus.CounterVec // tier: hot | redis | postgres
	HoldError     prometheus.Counter
	RedisFallback prometheus.Counter
	HoldDuration  *prometheus.HistogramVec // path, outcome
	PGHoldWrites  prometheus.Counter       // hold statements sent to Postgres
	Extended      prometheus.Counter
	Converted     prometheus.Counter
	Cancelled     prometheus.Counter
	Released      prometheus.Counter
	Expired       prometheus.Counter
	// WaitlistOffers counts offers made to waiting buyers.
	WaitlistOffers prometheus.Counter
	ReaperRuns     prometheus.Counter
	ReaperDuration prometheus.Histogram
	// ReaperLastSuccess is when a reaper pass last finished without error
	// (unix seconds; 0 until the first).
	ReaperLastSuccess prometheus.Gauge
	// ReaperLag is how long past its held_until each expired hold was
	// when the reaper expired it.
	ReaperLag          prometheus.Histogram
	BreakerOpen        prometheus.Gauge
	BreakerTransitions *prometheus.CounterVec // to: closed | half-open | open
	Reconciles         prometheus.Counter
	DeltasOut          prometheus.Counter
	DeltasIn           prometheus.Counter
	HotCacheSeats      prometheus.Gauge
	CacheEvictions     prometheus.Counter
	// CacheWarms counts events loaded ahead of their buyers (on sale at
	// startup, published, or reloaded while on sale).
	CacheWarms prometheus.Counter
	// FeedRounds counts follower rounds; FeedChanges the seat changes they
	// read and FeedApplied the ones the cache had not had from a delta.
	FeedRounds       prometheus.Counter
	FeedChanges      prometheus.Counter
	FeedApplied      prometheus.Counter
	RedisSyncs       *prometheus.CounterVec // kind: full | incremental
	BackgroundErrors *prometheus.CounterVec // task: feed | redis_sync | publish | ...
}

// New creates the metrics and registers them on reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		HoldAttempt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hold_attempt_total", Help: "Hold requests received by the core."}),
		HoldSuccess: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_hold_success_total", Help: "Holds granted, by path."}, []string{"path"}),
		HoldConflict: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_hold_conflict_total", Help: "Holds refused because the seat was taken, by the tier that refused."},
			[]string{"tier"}),
		HoldError: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hold_error_total", Help: "Holds that failed with an internal error."}),
		RedisFallback: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hold_redis_fallback_total", Help: "Holds served by the Postgres-only path because Redis was unavailable."}),
		HoldDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seatd_hold_duration_seconds",
			Help:    "Time to decide a hold, by path (hot: decided from the cache; fast: Redis then Postgres; fallback: Postgres only) and outcome (ok, idempotent, or the error code).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}}, []string{"path", "outcome"}),
		PGHoldWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hold_pg_writes_total", Help: "Hold write statements sent to Postgres."}),
		Extended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hold_extended_total", Help: "Holds extended at checkout."}),
		Cancelled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_tickets_cancelled_total", Help: "Tickets cancelled (their seats available again)."}),
		Converted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hold_converted_total", Help: "Holds converted into tickets."}),
		Released: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hold_released_total", Help: "Holds released by their holder or staff."}),
		Expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hold_expired_total", Help: "Holds expired by the reaper."}),
		WaitlistOffers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_waitlist_offers_total", Help: "Offers of freed seats made to waiting buyers."}),
		ReaperRuns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_reaper_runs_total", Help: "Reaper passes."}),
		ReaperDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seatd_reaper_duration_seconds", Help: "Duration of a reaper pass.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		ReaperLastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_reaper_last_success_timestamp_seconds", Help: "When a reaper pass last finished without error (unix seconds; 0 before the first)."}),
		ReaperLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seatd_reaper_lag_seconds", Help: "How long past its held_until each hold was when the reaper expired it.",
			Buckets: []float64{.1, .25, .5, 1, 2, 5, 10, 30, 60, 300}}),
		BreakerOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_redis_breaker_open", Help: "1 while the Redis circuit breaker keeps the fast path off (open or probing)."}),
		BreakerTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_redis_breaker_transitions_total", Help: "Redis circuit breaker state changes, by the state entered (closed, half-open, open)."},
			[]string{"to"}),
		Reconciles: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_registry_reconciles_total", Help: "Redis rebuilds from Postgres."}),
		DeltasOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_deltas_published_total", Help: "Seat changes published."}),
		DeltasIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_deltas_received_total", Help: "Seat changes received from the bus."}),
		HotCacheSeats: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_hot_cache_seats", Help: "Seats held in this process's hot cache."}),
		CacheEvictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hot_cache_evictions_total", Help: "Idle events dropped from the hot cache."}),
		CacheWarms: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_hot_cache_warms_total", Help: "On-sale events loaded into the hot cache ahead of their buyers."}),
		FeedRounds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_feed_rounds_total", Help: "Change-feed reads by the follower."}),
		FeedChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_feed_changes_total", Help: "Seat changes read from the change feed."}),
		FeedApplied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_feed_applied_total", Help: "Seat changes the hot cache got from the feed, not from a live delta."}),
		RedisSyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_redis_syncs_total", Help: "Syncs of Redis locks from Postgres, by kind (full, incremental)."}, []string{"kind"}),
		BackgroundErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_background_errors_total", Help: "Errors of background work, by task (feed, redis_sync, publish, warm, waitlist, reaper, prune_hold_requests)."},
			// Not "job": Prometheus's target label would rename it.
			[]string{"task"}),
	}
	reg.MustRegister(m.HoldAttempt, m.HoldSuccess, m.HoldConflict, m.HoldError, m.RedisFallback, m.HoldDuration,
		m.PGHoldWrites, m.Extended, m.Converted, m.Cancelled, m.Released, m.Expired, m.WaitlistOffers, m.ReaperRuns, m.ReaperDuration,
		m.ReaperLastSuccess, m.ReaperLag, m.BreakerOpen, m.BreakerTransitions, m.Reconciles, m.DeltasOut, m.DeltasIn, m.HotCacheSeats, m.CacheEvictions, m.CacheWarms,
		m.FeedRounds, m.FeedChanges, m.FeedApplied, m.RedisSyncs, m.BackgroundErrors)
	// Every known label value starts at zero, so its series exist before
	// the first event: rates and alerts see the first increment, and
	// dashboards find the series.
	for _, path := range []string{"fast", "fallback", "idempotent"} {
		m.HoldSuccess.WithLabelValues(path)
	}
	for _, tier := range []string{"hot", "redis", "postgres"} {
		m.HoldConflict.WithLabelValues(tier)
	}
	for _, state := range []string{"closed", "half-open", "open"} {
		m.BreakerTransitions.WithLabelValues(state)
	}
	for _, kind := range []string{"full", "incremental"} {
		m.RedisSyncs.WithLabelValues(kind)
	}
	for _, task := range []string{"feed", "redis_sync", "publish", "warm", "waitlist", "reaper", "prune_hold_requests"} {
		m.BackgroundErrors.WithLabelValues(task)
	}
	return m
}
