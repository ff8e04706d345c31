package web

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"seatd/internal/auth"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/live"
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
	Store    *store.Store
	Core     Core
	Accounts Accounts
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

// Core is what the handlers, the live hub and the registry panel ask of the
// hold core; *hold.Service satisfies it.
type Core interface {
	live.Source
	live.WaitlistSource
	registryCore

	Hold(ctx context.Context, a hold.Actor, event uuid.UUID, seatIDs []uuid.UUID, source string) (hold.Result, error)
	HoldGAOnce(ctx context.Context, a hold.Actor, event uuid.UUID, section string, count int, source, key string) (hold.Result, error)
	GASections(ctx context.Context, a hold.Actor, event uuid.UUID) ([]hold.GASection, error)
	HoldChosen(ctx context.Context, a hold.Actor, event uuid.UUID, seatIDs []uuid.UUID, source string, c hold.Choice) (hold.Result, error)
	HoldBestOnce(ctx context.Context, a hold.Actor, event uuid.UUID, b hold.Best, source, key string) (hold.Result, error)
	Holds(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Hold, error)
	Release(ctx context.Context, a hold.Actor, holdID uuid.UUID, reason string) (store.Hold, error)
	Checkout(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Hold, error)
	Purchase(ctx context.Context, a hold.Actor, event uuid.UUID, key string, holdIDs []uuid.UUID) (store.Booking, error)
	SetBlocked(ctx context.Context, a hold.Actor, event, seat uuid.UUID, blocked bool, reason string) (int64, error)

	HoldFor(ctx context.Context, a hold.Actor, event uuid.UUID, seatIDs []uuid.UUID, c store.Customer, until time.Time) (hold.Result, error)
	HoldBestForOnce(ctx context.Context, a hold.Actor, event uuid.UUID, b hold.Best, c store.Customer, until time.Time, key string) (hold.Result, error)
	Sell(ctx context.Context, a hold.Actor, event uuid.UUID, key string, holdIDs []uuid.UUID, payment string) (store.Booking, error)
	Booking(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Booking, error)
	FindBookings(ctx context.Context, a hold.Actor, query string) ([]store.Booking, error)
	Cancel(ctx context.Context, a hold.Actor, booking uuid.UUID, ticketIDs []uuid.UUID, reason string) (store.Booking, error)
	HouseSeats(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.HouseAllocation, error)
	CreateHouseSeats(ctx context.Context, a hold.Actor, event uuid.UUID, name string, seatIDs []uuid.UUID) (store.HouseAllocation, error)
	ReleaseHouseSeats(ctx context.Context, a hold.Actor, id uuid.UUID) (store.HouseAllocation, error)
	JoinWaitlist(ctx context.Context, a hold.Actor, event uuid.UUID, w hold.WaitFor) (store.WaitlistEntry, error)
	MyWaitlist(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.WaitlistEntry, error)
	EventWaitlist(ctx context.Context, a hold.Actor, event uuid.UUID, limit int) (int, []store.WaitlistEntry, error)
	LeaveWaitlist(ctx context.Context, a hold.Actor, id uuid.UUID) error

	Seats(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Section, []store.Seat, error)
	SeatViews(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Section, []hold.SeatView, error)
	SeatLayout(org, event, seat uuid.UUID) (hold.SeatView, bool)
	SeatLabel(ctx context.Context, a hold.Actor, event, seat uuid.UUID) string

	Occupancy(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Occupancy, error)
	PaidOccupancy(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Occupancy, error)
	RecomputeOccupancy(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Occupancy, error)
	Snapshots(ctx context.Context, a hold.Actor, event uuid.UUID, since time.Time) ([]store.Snapshot, error)

	CreateEvent(ctx context.Context, a hold.Actor, in hold.EventInput) (store.Event, error)
	UpdateEvent(ctx context.Context, a hold.Actor, id uuid.UUID, in hold.EventInput) (store.Event, error)
	DeleteEvent(ctx context.Context, a hold.Actor, id uuid.UUID) error
	Prices(ctx context.Context, a hold.Actor, event uuid.UUID) (map[string]store.Category, error)
	Extension(ctx context.Context, a hold.Actor, event uuid.UUID) (time.Duration, error)
	Settings(ctx context.Context, a hold.Actor, event uuid.UUID) (store.Event, error)

	FastPath() bool
	BreakerState() string
}

var _ Core = (*hold.Service)(nil)

// Accounts is what sign-in, sign-up and the session check ask of the
// accounts; *auth.Accounts satisfies it.
type Accounts interface {
	Authenticate(ctx context.Context, orgSlug, email, password string) (store.Org, store.User, error)
	Create(ctx context.Context, org uuid.UUID, email, password, role string) (store.User, error)
	Current(ctx context.Context, org, user uuid.UUID, role string) (bool, error)
}

var _ Accounts = (*auth.Accounts)(nil)
