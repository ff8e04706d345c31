package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Webhook delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // given up
)

// WebhookEndpoint is a URL of an organization that receives deliveries of
// the event types it names.
type WebhookEndpoint struct {
	ID     uuid.UUID
	OrgID  uuid.UUID
	URL    string
	Events []string
	// Secret is the signing secret, in the answers of CreateEndpoint and
	// RotateSecret only (shown once); reads leave it empty.
	Secret    string
	CreatedAt time.Time
	// PreviousUntil is when the secret a rotation replaced stops signing
	// beside the new one (nil: no rotation under way).
	PreviousUntil *time.Time
}

// CreateEndpoint stores an endpoint with its signing secret sealed,
// unless org has its quota of them (409 conflict;
// Quotas.WebhookEndpoints).
//
// byKey is the API key registering it (nil: a signed-in organizer is):
// the endpoint is deleted when that key is revoked (RevokeAPIKey), and a
// revoked or expired key registers nothing.
func (s *Webhooks) CreateEndpoint(ctx context.Context, org uuid.UUID, byKey *uuid.UUID, url string, events []string, secret string) (WebhookEndpoint, error) {
	e := WebhookEndpoint{ID: NewID(), OrgID: org, URL: url, Events: events, Secret: secret}
	sealed, err := s.sealSecret(org, e.ID, secret)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	err = inTx(ctx, s.db, func(tx pgx.Tx) error {
		if err := liveMaker(ctx, tx, org, byKey); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO webhook_endpoints (id, org_id, url, events, sealed_secret, created_by_key) VALUES ($1, $2, $3, $4, $5, $6)
			RETURNING created_at`,
			e.ID, org, url, events, sealed, byKey).Scan(&e.CreatedAt); err != nil {
			return err
		}
		return s.checkQuota(ctx, tx, org, quotaWebhooks)
	})
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return e, nil
}

const endpointColumns = `id, org_id, url, events, '', created_at,
	CASE WHEN previous_secret_until > now() THEN previous_secret_until END`

// Endpoints lists an organization's endpoints, newest first.
func (s *Webhooks) Endpoints(ctx context.Context, org uuid.UUID) ([]WebhookEndpoint, error) {
	rows, err := s.db.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE org_id = $1 AND deleted_at IS NULL ORDER BY created_at DESC, id`, org)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[WebhookEndpoint])
}

// Endpoint returns one endpoint of org.
func (s *Webhooks) Endpoint(ctx context.Context, org, id uuid.UUID) (WebhookEndpoint, error) {
	rows, err := s.db.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`, org, id)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	e, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[WebhookEndpoint])
	return e, notFoundIfNoRows(err, "webhook")
}

// DeleteEndpoint deletes an endpoint of org: no new deliveries are
// written for it, and its pending ones are given up. The rows stay for the
// record.
func (s *Webhooks) DeleteEndpoint(ctx context.Context, org, id uuid.UUID) error {
	return inTx(ctx, s.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET deleted_at = now()
			WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`, org, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFoundIfNoRows(pgx.ErrNoRows, "webhook")
		}
		return giveUpDeliveries(ctx, tx, org, []uuid.UUID{id})
	})
}

// deleteEndpointsOf deletes the endpoints of org that the API keys keys
// registered, giving their pending deliveries up (RevokeAPIKey).
func deleteEndpointsOf(ctx context.Context, tx pgx.Tx, org uuid.UUID, keys []uuid.UUID) error {
	rows, err := tx.Query(ctx, `UPDATE webhook_endpoints SET deleted_at = now()
		WHERE org_id = $1 AND created_by_key = ANY ($2) AND deleted_at IS NULL RETURNING id`, org, keys)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(ids) == 0 {
		return err
	}
	return giveUpDeliveries(ctx, tx, org, ids)
}

// giveUpDeliveries fails the pending deliveries of deleted endpoints.
func giveUpDeliveries(ctx context.Context, tx pgx.Tx, org uuid.UUID, endpoints []uuid.UUID) error {
	_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = 'failed', last_error = 'endpoint deleted', locked_until = NULL
		WHERE org_id = $1 AND endpoint_id = ANY ($2) AND state = 'pending'`, org, endpoints)
	return err
}

// Delivery is one outbox row: a change to send to one endpoint.
type Delivery struct {
	ID          int64
	PublicID    uuid.UUID
	EndpointID  uuid.UUID
	Type        string
	EventID     *uuid.UUID
	SeatID      *uuid.UUID
	Data        json.RawMessage
	CreatedAt   time.Time
	State       string
	Attempts    int
	NextAt      time.Time
	LastStatus  *int
	LastError   *string
	DeliveredAt *time.Time
}

// Deliveries lists an endpoint's deliveries, newest first, before the
// keyset cursor (0: from the newest).
func (s *Webhooks) Deliveries(ctx context.Context, org, endpoint uuid.UUID, before int64, limit int) ([]Delivery, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.db.Query(ctx, `
		SELECT id, public_id, endpoint_id, type, event_id, seat_id, data, created_at, state, attempts, next_at,
		       last_status, last_error, delivered_at
		FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2 AND id < $3
		ORDER BY id DESC LIMIT $4`, org, endpoint, before, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Delivery])
}

// Redeliver sends a delivery of org again: pending and due now, whatever
// its state. ErrNotFound for another organization's delivery.
func (s *Webhooks) Redeliver(ctx context.Context, org, endpoint uuid.UUID, id uuid.UUID) error {
	tag, err := s.db.Exec(ctx, `
		UPDATE webhook_deliveries d SET state = 'pending', next_at = now(), locked_until = NULL, delivered_at = NULL
		FROM webhook_endpoints e
		WHERE d.org_id = $1 AND d.endpoint_id = $2 AND d.public_id = $3
		  AND e.org_id = d.org_id AND e.id = d.endpoint_id AND e.deleted_at IS NULL`, org, endpoint, id)
	if err == nil && tag.RowsAffected() == 0 {
		return notFoundIfNoRows(pgx.ErrNoRows, "delivery")
	}
	return err
}

// Claimed is a delivery a worker took to send, with where and how.
type Claimed struct {
	Delivery
	OrgID uuid.UUID
	URL   string
	// Secrets sign the delivery: the endpoint's secret, and while a
	// rotation's grace lasts the one it replaced.
	Secrets []string
	// SecretErr is why the secrets are missing: they do not open (not
	// sealed under this SEATD_TICKET_SECRET, or altered).
	SecretErr error
	// Failing says the endpoint's last attempts all failed: this one is a
	// probe (see ClaimDeliveries).
	Failing bool
}

// claimDeliveriesSQL is ClaimDeliveries' statement: $1 the batch, $2 the
// lease, $3 the free probe places.
const claimDeliveriesSQL = `
		WITH RECURSIVE orgs AS (
		    (SELECT org_id FROM webhook_deliveries WHERE state = 'pending' ORDER BY org_id LIMIT 1)
		    UNION ALL
		    SELECT (SELECT d.org_id FROM webhook_deliveries d
		            WHERE d.state = 'pending' AND d.org_id > o.org_id ORDER BY d.org_id LIMIT 1)
		    FROM orgs o WHERE o.org_id IS NOT NULL
		), due AS (
		    SELECT c.org_id, c.id, c.ctid, c.next_at, e.failing_since IS NOT NULL AS failing,
		           row_number() OVER (PARTITION BY c.org_id ORDER BY c.next_at, c.id) AS turn
		    FROM orgs o
		    JOIN webhook_endpoints e ON e.org_id = o.org_id AND e.deleted_at IS NULL
		    CROSS JOIN LATERAL (
		        SELECT d.org_id, d.id, d.ctid, d.next_at FROM webhook_deliveries d
		        WHERE d.org_id = e.org_id AND d.endpoint_id = e.id AND d.state = 'pending' AND d.next_at <= now()
		          AND (d.locked_until IS NULL OR d.locked_until < now())
		          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
		                          WHERE p.state = 'pending' AND p.org_id = d.org_id AND p.endpoint_id = d.endpoint_id
		                            AND p.seat_id = d.seat_id AND p.id < d.id OFFSET 0)
		        ORDER BY d.next_at, d.id
		        LIMIT CASE WHEN e.failing_since IS NULL THEN $1::int ELSE 1 END
		    ) c
		), c AS (
		    SELECT d.org_id, d.id, r.failing
		    FROM (SELECT due.*, row_number() OVER (PARTITION BY due.failing ORDER BY due.turn, due.next_at, due.id) AS k
		          FROM due) r
		    JOIN webhook_deliveries d ON d.ctid = r.ctid AND d.org_id = r.org_id AND d.id = r.id
		    WHERE d.state = 'pending' AND (d.locked_until IS NULL OR d.locked_until < now()) AND (NOT r.failing OR r.k <= $3)
		    ORDER BY r.turn, r.next_at, r.id
		    LIMIT $1::int
		    FOR UPDATE OF d SKIP LOCKED
		)
		UPDATE webhook_deliveries d SET locked_until = now() + $2::interval, attempts = d.attempts + 1
		FROM c, webhook_endpoints e
		WHERE d.org_id = c.org_id AND d.id = c.id AND e.org_id = d.org_id AND e.id = d.endpoint_id
		RETURNING d.id, d.public_id, d.endpoint_id, d.type, d.event_id, d.seat_id, d.data, d.created_at, d.state,
		          d.attempts, d.next_at, d.last_status, d.last_error, d.delivered_at, d.org_id, e.url, c.failing,
		          e.secret, e.sealed_secret, CASE WHEN e.previous_secret_until > now() THEN e.previous_secret END`

// ClaimDeliveries takes up to limit due deliveries for lease: each is the
// oldest pending delivery of its endpoint and seat (a seat's later
// delivery waits until the earlier one is delivered or given up), and
// none is claimed by another worker (SKIP LOCKED, then the lease). A
// worker that dies leaves its claims to be taken again when the lease
// ends: deliveries are at least once.
//
// The claim is fair between organizations: it takes each organization's
// due deliveries oldest first and interleaves them (every
// organization's first, then every one's second...), so a tenant with a
// backlog of thousands shares each batch with the others instead of
// coming before them all. An endpoint marked failing (its last attempts
// all failed: FinishDeliveries) gives one delivery to a claim at most, a
// probe, and probes number at most probes in all: a dead receiver's
// backlog is tried a little at a time, apart from the batch (see the
// webhook worker). The organizations with pending deliveries are found by
// skipping through an index (webhook_deliveries_org_due_idx, migration
// 035): one probe of it each, however long their backlogs.
//
// The plan must not depend on the table's statistics: the pending rows
// go from none to tens of thousands within a minute (a burst of changes,
// a receiver back after an outage), long before autovacuum's next
// ANALYZE, and a plan chosen for "no pending rows" walked every pending
// row of the endpoint for each one it looked at (2.4 s a claim at a
// backlog of 14 000, so the backlog grew faster than it was sent). So the
// check for an earlier delivery of the same seat is a subquery kept apart
// by OFFSET 0, run per row on webhook_deliveries_seat_idx with all its
// columns, not a join the planner may turn inside out; and the rows are
// found again for locking by the ctid the first scan read them at, not
// through whichever index the statistics make look cheapest.
func (s *Webhooks) ClaimDeliveries(ctx context.Context, limit, probes int, lease time.Duration) ([]Claimed, error) {
	rows, err := s.db.Query(ctx, claimDeliveriesSQL,
		limit, lease, probes)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Claimed, error) {
		var c Claimed
		var plaintext *string
		var sealed, previous []byte
		d := &c.Delivery
		err := r.Scan(&d.ID, &d.PublicID, &d.EndpointID, &d.Type, &d.EventID, &d.SeatID, &d.Data, &d.CreatedAt, &d.State,
			&d.Attempts, &d.NextAt, &d.LastStatus, &d.LastError, &d.DeliveredAt, &c.OrgID, &c.URL, &c.Failing,
			&plaintext, &sealed, &previous)
		if err == nil {
			c.Secrets, c.SecretErr = s.openSecrets(c.OrgID, d.EndpointID, plaintext, sealed, previous)
		}
		return c, err
	})
}

// Attempt is the outcome of sending a claimed delivery once.
type Attempt struct {
	Org      uuid.UUID // the delivery's organization
	Delivery int64
	At       time.Time
	Status   int    // HTTP status; 0 when no answer
	Error    string // "" when delivered
	Duration time.Duration
	// State is the delivery's state after the attempt; NextAt when it is
	// tried again (pending).
	State  string
	NextAt time.Time
}

// FinishDeliveries records attempts and applies their outcomes in one
// statement. A delivery tried again later also moves its seat's later
// deliveries to that time, so workers do not look at rows that must wait
// for it anyway (the claim's ordering check holds regardless). An
// endpoint none of whose attempts here succeeded is marked failing from
// the first of them (ClaimDeliveries then gives it few deliveries at a
// time), one with any success is no longer; the row is written only when
// that changes.
func (s *Webhooks) FinishDeliveries(ctx context.Context, as []Attempt) error {
	if len(as) == 0 {
		return nil
	}
	n := len(as)
	orgs, ids, ats, statuses, errs, durs, states, nexts := make([]uuid.UUID, n), make([]int64, n), make([]time.Time, n),
		make([]*int32, n), make([]*string, n), make([]int32, n), make([]string, n), make([]time.Time, n)
	for i, a := range as {
		orgs[i], ids[i], ats[i], durs[i], states[i], nexts[i] = a.Org, a.Delivery, a.At, int32(min(a.Duration.Milliseconds(), 1<<31-1)), a.State, a.NextAt // #nosec G115 -- clamped
		if a.Status != 0 {
			st := int32(a.Status) // #nosec G115 -- an HTTP status
			statuses[i] = &st
		}
		if a.Error != "" {
			e := a.Error
			errs[i] = &e
		}
	}
	_, err := s.db.Exec(ctx, `
		WITH a AS (
		    SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[], $4::int[], $5::text[], $6::int[], $7::text[],
		                         $8::timestamptz[])
		             AS a(org_id, id, at, status, error, duration_ms, state, next_at)
		), att AS (
		    INSERT INTO webhook_attempts (org_id, delivery_id, at, status, error, duration_ms)
		    SELECT org_id, id, at, status, error, duration_ms FROM a
		), upd AS (
		    UPDATE webhook_deliveries d
		    SET state = a.state, next_at = a.next_at, locked_until = NULL, last_status = a.status, last_error = a.error,
		        delivered_at = CASE WHEN a.state = 'delivered' THEN a.at END
		    FROM a WHERE d.org_id = a.org_id AND d.id = a.id
		    RETURNING d.org_id, d.id, d.endpoint_id, d.seat_id, d.state, d.next_at, a.at
		), health AS (
		    UPDATE webhook_endpoints e
		    SET failing_since = CASE WHEN h.ok THEN NULL ELSE h.since END
		    FROM (SELECT org_id, endpoint_id, bool_or(state = 'delivered') AS ok, min(at) AS since
		          FROM upd GROUP BY org_id, endpoint_id) h
		    WHERE e.org_id = h.org_id AND e.id = h.endpoint_id AND (e.failing_since IS NULL) <> h.ok
		)
		UPDATE webhook_deliveries l SET next_at = upd.next_at
		FROM upd
		WHERE upd.state = 'pending' AND upd.seat_id IS NOT NULL AND l.state = 'pending' AND l.org_id = upd.org_id
		  AND l.endpoint_id = upd.endpoint_id AND l.seat_id = upd.seat_id AND l.id > upd.id AND l.next_at < upd.next_at`,
		orgs, ids, ats, statuses, errs, durs, states, nexts)
	return err
}

// ReleaseDeliveries gives back claimed deliveries whose attempts were cut
// short by the worker's shutdown, unrecorded: they are due again at once
// for any worker, with their claim's count of attempts undone, and their
// endpoints' health unchanged (a shutdown says nothing of the receiver).
func (s *Webhooks) ReleaseDeliveries(ctx context.Context, as []Attempt) error {
	if len(as) == 0 {
		return nil
	}
	orgs, ids := make([]uuid.UUID, len(as)), make([]int64, len(as))
	for i, a := range as {
		orgs[i], ids[i] = a.Org, a.Delivery
	}
	_, err := s.db.Exec(ctx, `UPDATE webhook_deliveries SET locked_until = NULL, attempts = attempts - 1
		WHERE (org_id, id) IN (SELECT * FROM unnest($1::uuid[], $2::bigint[])) AND state = 'pending'`, orgs, ids)
	return err
}

// DeliveryAttempts lists the attempts of a delivery of org, oldest first.
func (s *Webhooks) DeliveryAttempts(ctx context.Context, org uuid.UUID, delivery int64) ([]Attempt, error) {
	rows, err := s.db.Query(ctx, `
		SELECT a.delivery_id, a.at, coalesce(a.status, 0), coalesce(a.error, ''), a.duration_ms
		FROM webhook_attempts a
		WHERE a.org_id = $1 AND a.delivery_id = $2 ORDER BY a.id`, org, delivery)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attempt, error) {
		var a Attempt
		var ms int32
		err := r.Scan(&a.Delivery, &a.At, &a.Status, &a.Error, &ms)
		a.Duration = time.Duration(ms) * time.Millisecond
		return a, err
	})
}

// OutboxDepth counts deliveries still to send.
func (s *Webhooks) OutboxDepth(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`).Scan(&n)
	return n, err
}

// PruneDeliveries deletes up to limit deliveries (and their attempts) that
// were delivered or given up before before; pending ones are never
// deleted.
func (s *Webhooks) PruneDeliveries(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := s.db.Exec(ctx, `
		DELETE FROM webhook_deliveries WHERE (org_id, id) IN (
		    SELECT org_id, id FROM webhook_deliveries WHERE state <> 'pending' AND created_at < $1 ORDER BY id LIMIT $2)`, before, limit)
	return tag.RowsAffected(), err
}
