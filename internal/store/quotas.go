package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// Quotas bound what one organization may have at once, so that one
// tenant (or a leaked key of one) cannot fill the database or the
// workers every tenant shares. A quota of 0 or less is no limit.
type Quotas struct {
	Charts           int // charts (each with its versions)
	Events           int // events open: drafts and events on sale (closed and deleted ones do not count)
	APIKeys          int // API keys not revoked
	WebhookEndpoints int // webhook endpoints not deleted
	Invitations      int // invitations pending: neither accepted, revoked nor expired
}

// DefaultQuotas are the quotas of a Store until SetQuotas (config's
// defaults, SEATD_QUOTA_*, are the same).
var DefaultQuotas = Quotas{Charts: 100, Events: 200, APIKeys: 50, WebhookEndpoints: 20, Invitations: 500}

// SetQuotas sets the quotas checked from now on; call it before the store
// is used (app does, from config).
func (s *Store) SetQuotas(q Quotas) { s.shared.quotas = q }

// quota is one kind of thing an organization has a quota of.
type quota struct {
	key   string // names the kind in the lock
	what  string // what is counted, for the refusal
	free  string // how to make room
	count string // SQL: how many org ($1) has
	limit func(Quotas) int
}

var (
	quotaCharts = quota{key: "charts", what: "charts", free: "delete one it no longer uses",
		count: `SELECT count(*) FROM charts WHERE org_id = $1`, limit: func(q Quotas) int { return q.Charts }}
	quotaEvents = quota{key: "events", what: "open events (drafts and events on sale)", free: "close or delete one",
		count: `SELECT count(*) FROM events WHERE org_id = $1 AND status IN ('draft', 'on_sale')`,
		limit: func(q Quotas) int { return q.Events }}
	quotaAPIKeys = quota{key: "api_keys", what: "API keys", free: "revoke one it no longer uses",
		count: `SELECT count(*) FROM api_keys WHERE org_id = $1 AND revoked_at IS NULL`,
		limit: func(q Quotas) int { return q.APIKeys }}
	quotaWebhooks = quota{key: "webhooks", what: "webhook endpoints", free: "delete one it no longer uses",
		count: `SELECT count(*) FROM webhook_endpoints WHERE org_id = $1 AND deleted_at IS NULL`,
		limit: func(q Quotas) int { return q.WebhookEndpoints }}
)

// checkQuota refuses (409 conflict) a creation that brings org past its
// quota of q. Call it in the creating transaction, after the new row is
// written: it counts that row with the committed ones.
//
// Two creations at the edge must not both pass, and under READ COMMITTED
// neither sees the other's uncommitted row. So the count is taken under a
// transaction-level advisory lock of the organization and kind: the
// second waits for the first to commit (the lock goes with it), and its
// count, a new statement and so a new snapshot, sees the first's row.
// Creations of other kinds or other organizations do not wait; a wait
// longer than the lock timeout is a conflict to try again.
func (s *shared) checkQuota(ctx context.Context, tx pgx.Tx, org uuid.UUID, q quota) error {
	limit := q.limit(s.quotas)
	if limit <= 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('seatd quota ' || $1 || ' ' || $2::text, 0))`,
		q.key, org); err != nil {
		if pg.IsLockNotAvailable(err) {
			return apperr.E(apperr.Conflict, "another of the organization's %s is being created right now; try again", q.what)
		}
		return err
	}
	var n int
	if err := tx.QueryRow(ctx, q.count, org).Scan(&n); err != nil {
		return err
	}
	if n > limit {
		return q.refusal(limit)
	}
	return nil
}

// refusal is the 409 of a creation past the quota. Fields["quota"] names
// the kind, so a client can tell it from other conflicts.
func (q quota) refusal(limit int) error {
	return &apperr.Error{Code: apperr.Conflict,
		Message: fmt.Sprintf("the organization has reached its limit of %d %s; %s first", limit, q.what, q.free),
		Fields:  map[string]string{"quota": fmt.Sprintf("%s: at most %d", q.key, limit)}}
}

// atQuota refuses early, without the lock, a creation of q that would be
// refused anyway: for creations that cost work before checkQuota (an
// event's seats). checkQuota still decides.
func (s *shared) atQuota(ctx context.Context, org uuid.UUID, q quota) error {
	limit := q.limit(s.quotas)
	if limit <= 0 {
		return nil
	}
	var n int
	if err := s.db.QueryRow(ctx, q.count, org).Scan(&n); err != nil {
		return err
	}
	if n >= limit {
		return q.refusal(limit)
	}
	return nil
}
