package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TicketKey is an event's ticket signing key as stored: the Ed25519
// public key and the private key's seed, sealed (package ticket seals and
// opens it; this package only keeps the bytes).
type TicketKey struct {
	Org, Event uuid.UUID
	Public     []byte
	SealedSeed []byte
}

// TicketKeys stores the events' ticket signing keys (migration 031).
type TicketKeys struct{ db *pgxpool.Pool }

// NewTicketKeys returns the ticket keys stored in db.
func NewTicketKeys(db *pgxpool.Pool) *TicketKeys { return &TicketKeys{db: db} }

// Get returns the key of an event of org: NotFound when the event is not
// org's, is deleted, or has no key yet.
func (s *TicketKeys) Get(ctx context.Context, org, event uuid.UUID) (TicketKey, error) {
	k := TicketKey{Org: org, Event: event}
	err := s.db.QueryRow(ctx, `
		SELECT k.public_key, k.sealed_seed
		FROM ticket_keys k JOIN events e ON e.org_id = k.org_id AND e.id = k.event_id
		WHERE k.org_id = $1 AND k.event_id = $2 AND e.status <> 'deleted'`, org, event).Scan(&k.Public, &k.SealedSeed)
	return k, notFoundIfNoRows(err, "event")
}

// Add stores k as its event's key unless the event has one already, and
// returns the event's key: k, or the one another caller stored first (the
// first one stays: codes already given out were signed with it). An event
// that is not k.Org's, or is deleted, is NotFound.
func (s *TicketKeys) Add(ctx context.Context, k TicketKey) (TicketKey, error) {
	err := s.db.QueryRow(ctx, `
		INSERT INTO ticket_keys (org_id, event_id, public_key, sealed_seed)
		SELECT $1, $2, $3, $4 FROM events WHERE org_id = $1 AND id = $2 AND status <> 'deleted'
		ON CONFLICT (org_id, event_id) DO NOTHING
		RETURNING public_key`, k.Org, k.Event, k.Public, k.SealedSeed).Scan(new([]byte))
	if errors.Is(err, pgx.ErrNoRows) {
		// Not inserted: the event has a key (committed, since the insert
		// waited for it), or is not there. A new statement sees which.
		return s.Get(ctx, k.Org, k.Event)
	}
	return k, err
}
