// Package store owns seatd's SQL. Every method takes the organization and
// filters by it; nothing here knows about HTTP, Redis or caches.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/apperr"
)

// Store is seatd's storage: one sub-store for each kind of thing stored,
// all on one pool. Consumers take the sub-store they use.
type Store struct {
	Accounts *Accounts
	Devices  *Devices
	Tokens   *Tokens
	Charts   *Charts
	Events   *Events
	Holds    *Holds
	Bookings *Bookings
	Waitlist *Waitlist
	Webhooks *Webhooks
	Feed     *Feed
	Audit    *Audit
	Payments *Payments
	// PaymentLedger keeps the test provider's intents beside their
	// payments (payment.Ledger).
	PaymentLedger *PaymentLedger

	shared *shared
}

// shared is what the sub-stores share: the pool and the hold batchers. A
// sub-store reaches another's unexported helpers through it.
type shared struct {
	db       *pgxpool.Pool
	batch    *holdBatcher // nil: every hold has its own statement
	together *holdBatcher // nil: every hold of several seats has its own transaction
	keys     keyBatches   // keyed hold requests' claims and finishes

	// betweenReadAndWrite, set by tests only, runs in a shared hold
	// transaction after its reads and before its hold statement.
	betweenReadAndWrite func()

	quotas  Quotas // per organization (SetQuotas)
	secrets Sealer // seals webhook secrets (SetSealer)
}

// Accounts stores organizations, users, sessions and API keys.
type Accounts struct{ *shared }

// Devices stores the signed-in sessions of each user as devices (what
// each is, where it was last seen) and ends them.
type Devices struct{ *shared }

// Tokens stores the single-use tokens mailed to people: email
// verification, password reset, and invitations.
type Tokens struct{ *shared }

// Charts stores venue charts and their versions.
type Charts struct{ *shared }

// Events stores events with their sections, seats and settings, and the
// figures read from them: occupancy, snapshots, paid revenue, exports.
type Events struct{ *shared }

// Holds stores hold writes: creating holds (alone or in the shared
// statements of the hold batchers), releasing, extending, reaping and
// blocking, keyed hold requests, and reads of active holds.
type Holds struct{ *shared }

// Bookings stores purchases, box-office sales, cancellations and house
// seats.
type Bookings struct{ *shared }

// Waitlist stores waitlist entries and the offers made to them.
type Waitlist struct{ *shared }

// Webhooks stores webhook endpoints and the delivery outbox.
type Webhooks struct{ *shared }

// Feed reads the change feed: an event's snapshot with its cursor, and the
// changes since a cursor.
type Feed struct{ *shared }

// Audit reads the audit log, buyer activity and the staff's pages of
// active holds.
type Audit struct{ *shared }

// New returns a Store on pool.
func New(db *pgxpool.Pool) *Store {
	sh := &shared{db: db, keys: newKeyBatches(db), quotas: DefaultQuotas}
	return &Store{
		Accounts: &Accounts{sh},
		Devices:  &Devices{sh},
		Tokens:   &Tokens{sh},
		Charts:   &Charts{sh},
		Events:   &Events{sh},
		Holds:    &Holds{sh},
		Bookings: &Bookings{sh},
		Waitlist: &Waitlist{sh},
		Webhooks: &Webhooks{sh},
		Feed:     &Feed{sh},
		Audit:    &Audit{sh},
		Payments: &Payments{sh},

		PaymentLedger: &PaymentLedger{sh},
		shared:        sh,
	}
}

// InTx runs fn in a transaction, committing when fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return inTx(ctx, s.shared.db, fn)
}

// inTx runs fn in a transaction on db, committing when fn returns nil.
func inTx(ctx context.Context, db *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return inTxWith(ctx, db, pgx.TxOptions{}, fn)
}

// inTxWith is inTx begun with opts: a BeginQuery sends the transaction's
// settings in BEGIN's own round trip.
func inTxWith(ctx context.Context, db *pgxpool.Pool, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Ping checks that Postgres answers. It also pings the shared holds' own
// idle connections, so that one which broke while Postgres was away is
// dropped by its pool (a failed ping closes it) and the next batch dials
// afresh instead of sending on it and not knowing whether its holds were
// made. Only idle ones: those pools have a connection or two, busy with
// the holds, and a readiness probe that waited its turn behind them took
// most of a second after a Postgres restart while holds flowed (a busy
// connection finds out for itself).
func (s *Store) Ping(ctx context.Context) error {
	sh := s.shared
	err := sh.db.Ping(ctx)
	if sh.batch == nil {
		return err
	}
	for _, db := range []*pgxpool.Pool{sh.batch.db, sh.together.db} {
		if db == sh.db {
			continue
		}
		for _, c := range db.AcquireAllIdle(ctx) {
			_ = c.Ping(ctx)
			c.Release()
		}
	}
	return err
}

func notFoundIfNoRows(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.E(apperr.NotFound, "%s not found", what)
	}
	return err
}
