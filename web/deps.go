package web

import (
	"context"
	"log/slog"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"seatd/internal/auth"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
)

// Deps are what the web layer is built from. The caller (cmd/seatd, the
// tests) assembles them; the web layer never sees the whole process.
type Deps struct {
	Cfg config.Config
	Log *slog.Logger
	// Pool stores the session rows (pgxstore needs the pool itself), sends
	// the session-end listener's heartbeats and answers the readiness
	// probe.
	Pool *pgxpool.Pool
	// Redis keeps the rate-limit counters shared by processes and answers
	// the readiness probe.
	Redis redis.UniversalClient
	// Store answers the reads pages and staff tables show (events, audit
	// log, hold pages, customers); the core owns every write.
	Store *store.Store
	// The hold core's jobs the handlers call; Engine also feeds the live
	// hub and says how holds go (fast path, breaker).
	Engine    *hold.Engine
	Holds     *hold.Holds
	BoxOffice *hold.BoxOffice
	Events    *hold.Events
	Waitlist  *hold.Waitlist
	Monitor   *hold.Monitor
	Accounts  Accounts
	// Notifier hears session ends and API key revocations announced by
	// Postgres (the process's notifier, internal/notify).
	Notifier Notifier
	// Registry takes the HTTP metrics and is served on the ops listener.
	Registry *prometheus.Registry
}

// Notifier is what the web layer needs of the process's notifier.
type Notifier interface {
	Listen(channel string, fn func(payload string)) (unlisten func())
	OnReady(fn func()) (remove func())
}

// Accounts is what sign-in, sign-up and the session check ask of the
// accounts; *auth.Accounts satisfies it.
type Accounts interface {
	Authenticate(ctx context.Context, orgSlug, email, password string) (store.Org, store.User, error)
	Create(ctx context.Context, org uuid.UUID, email, password, role string) (store.User, error)
	Current(ctx context.Context, org, user uuid.UUID, role string) (bool, error)
}

var _ Accounts = (*auth.Accounts)(nil)
