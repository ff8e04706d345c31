package web

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"seatd/internal/config"
	"seatd/internal/door"
	"seatd/internal/hold"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/internal/ticket"
	"seatd/web/api"
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
	Redis redis.Cmdable
	// Store holds what the handlers read beside the core (events, audit
	// log, hold pages, customers) and the charts, API keys and webhook
	// endpoints they keep; New hands each part only the sub-stores it
	// uses.
	Store *store.Store
	// The hold core's jobs the handlers call; Engine also feeds the live
	// hub and says how holds go (fast path, breaker).
	Engine    *hold.Engine
	Holds     *hold.Holds
	BoxOffice *hold.BoxOffice
	Events    *hold.Events
	Waitlist  *hold.Waitlist
	Monitor   *hold.Monitor
	Accounts  api.Authenticator
	// The door and tickets: admissions, ticket codes, and the bookings
	// with their tickets as pages and PDFs show them.
	Door    *door.Door
	Tickets ticket.Signer
	Details *store.BookingMail
	// Payments is the payment flow; TestPayments the embedded test
	// provider whose card page the server serves (nil with Stripe).
	Payments     *hold.Payments
	TestPayments *payment.TestProvider
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
