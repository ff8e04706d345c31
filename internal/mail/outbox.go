package mail

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// claimed is a message a worker claimed for one attempt.
type claimed struct {
	ID        int64
	Org       uuid.UUID
	To        string
	Subject   string
	Text      string
	HTML      string
	Attempts  int // this attempt included
	CreatedAt time.Time
	OrgName   string
	Sender    Sender
}

// claim takes up to n due messages for one attempt each: it counts the
// attempt and moves each message's next attempt to lease from now, so no
// other worker takes it meanwhile (SKIP LOCKED passes over rows another
// worker is claiming right now; the lease keeps them from being claimed
// again after that commit). A worker that dies leaves its messages to be
// claimed again when the lease ends.
func claim(ctx context.Context, db DBTX, n int, lease time.Duration) ([]claimed, error) {
	rows, err := db.Query(ctx, `
		UPDATE mail_outbox m
		SET attempts = m.attempts + 1, next_attempt_at = now() + make_interval(secs => $2)
		FROM (SELECT org_id, id FROM mail_outbox WHERE status = 'queued' AND next_attempt_at <= now()
				ORDER BY next_attempt_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) due,
			organizations o
		WHERE m.org_id = due.org_id AND m.id = due.id AND o.id = m.org_id
		RETURNING m.id, m.org_id, m.recipient, m.subject, m.text_body, m.html_body, m.attempts, m.created_at,
			o.name, COALESCE(o.mail_from_address, ''), COALESCE(o.mail_from_name, '')`,
		n, lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("claim mail: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		var c claimed
		err := r.Scan(&c.ID, &c.Org, &c.To, &c.Subject, &c.Text, &c.HTML, &c.Attempts, &c.CreatedAt,
			&c.OrgName, &c.Sender.Address, &c.Sender.Name)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim mail: %w", err)
	}
	return out, nil
}

// attachments reads a message's attachments, in order.
func attachments(ctx context.Context, db DBTX, m claimed) ([]Attachment, error) {
	rows, err := db.Query(ctx, `SELECT filename, content_type, COALESCE(content_id, ''), data
		FROM mail_attachments WHERE org_id = $1 AND mail_id = $2 ORDER BY position`, m.Org, m.ID)
	if err != nil {
		return nil, fmt.Errorf("mail attachments: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attachment, error) {
		var a Attachment
		err := r.Scan(&a.Filename, &a.ContentType, &a.ContentID, &a.Data)
		return a, err
	})
}

// markSent records that the SMTP server accepted a message.
func markSent(ctx context.Context, db DBTX, m claimed) error {
	_, err := db.Exec(ctx, `UPDATE mail_outbox SET status = 'sent', sent_at = now(), finished_at = now(), last_error = NULL
		WHERE org_id = $1 AND id = $2`, m.Org, m.ID)
	return err
}

// markFailed records a failed attempt: the message is tried again after
// wait, unless that is more than retryFor after it was enqueued, or the
// failure is permanent; then it is given up. It reports whether it was.
func markFailed(ctx context.Context, db DBTX, m claimed, reason string, wait, retryFor time.Duration, permanent bool) (givenUp bool, err error) {
	var status string
	err = db.QueryRow(ctx, `
		UPDATE mail_outbox SET last_error = $2, next_attempt_at = now() + make_interval(secs => $3),
			status = CASE WHEN $5 OR now() + make_interval(secs => $3) > created_at + make_interval(secs => $4)
				THEN 'failed' ELSE 'queued' END,
			finished_at = CASE WHEN $5 OR now() + make_interval(secs => $3) > created_at + make_interval(secs => $4)
				THEN now() END
		WHERE org_id = $6 AND id = $1 AND status = 'queued'
		RETURNING status`, m.ID, reason, wait.Seconds(), retryFor.Seconds(), permanent, m.Org).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return status == "failed", err
}

// release hands claimed messages that were not attempted back to the
// queue, due now and their attempt not counted.
func release(ctx context.Context, db DBTX, ms []claimed) error {
	if len(ms) == 0 {
		return nil
	}
	orgs, ids := make([]uuid.UUID, len(ms)), make([]int64, len(ms))
	for i, m := range ms {
		orgs[i], ids[i] = m.Org, m.ID
	}
	_, err := db.Exec(ctx, `UPDATE mail_outbox SET attempts = attempts - 1, next_attempt_at = now()
		WHERE (org_id, id) IN (SELECT * FROM unnest($1::uuid[], $2::bigint[])) AND status = 'queued'`, orgs, ids)
	return err
}

// prune deletes up to n messages finished (sent or given up) before
// before, with their attachments.
func prune(ctx context.Context, db DBTX, before time.Time, n int) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM mail_outbox WHERE (org_id, id) IN (
		SELECT org_id, id FROM mail_outbox WHERE status <> 'queued' AND finished_at < $1 LIMIT $2)`, before, n)
	return tag.RowsAffected(), err
}

// Queue reads how many messages are queued and how long the oldest has
// waited, by the database's clock.
func Queue(ctx context.Context, db DBTX) (depth int, oldest time.Duration, err error) {
	var secs float64
	err = db.QueryRow(ctx, `SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
		FROM mail_outbox WHERE status = 'queued'`).Scan(&depth, &secs)
	return depth, time.Duration(secs * float64(time.Second)), err
}
