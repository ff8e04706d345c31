package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// Device is one signed-in session of a user as its owner sees it
// (migration 034's user_sessions).
type Device struct {
	ID uuid.UUID
	// Token is the session's stored (hashed) token: it tells the request's
	// own session, and is never shown.
	Token      string
	Device     string
	IP         string
	CreatedAt  time.Time
	LastSeenAt time.Time
}

// Add records the session stored under token as a device of user,
// then ends the user's oldest sessions beyond max (a cap per account, so
// one account cannot gather sessions, and sockets with them, without
// bound), returning the ended sessions' stored tokens. The user's row is
// locked meanwhile, so two sign-ins at once cannot both stay under the
// cap by counting before each other's insert.
func (s *Devices) Add(ctx context.Context, org, user uuid.UUID, token, device, ip string, max int) ([]string, error) {
	var ended []string
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM users WHERE org_id = $1 AND id = $2 FOR UPDATE`, org, user).Scan(&one); err != nil {
			return notFoundIfNoRows(err, "user")
		}
		if _, err := tx.Exec(ctx, `INSERT INTO user_sessions (token, org_id, user_id, device, ip) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (token) DO NOTHING`, token, org, user, device, ip); err != nil {
			return err
		}
		var err error
		ended, err = deleteSessions(ctx, tx, `DELETE FROM sessions WHERE token IN (
			SELECT token FROM user_sessions WHERE org_id = $1 AND user_id = $2
			ORDER BY created_at DESC, id DESC OFFSET $3) RETURNING token`, org, user, max)
		return err
	})
	return ended, err
}

// List lists user's live sessions, newest first.
func (s *Devices) List(ctx context.Context, org, user uuid.UUID) ([]Device, error) {
	rows, err := s.db.Query(ctx, `
		SELECT d.id, d.token, d.device, d.ip, d.created_at, d.last_seen_at
		FROM user_sessions d JOIN sessions s ON s.token = d.token
		WHERE d.org_id = $1 AND d.user_id = $2 AND s.expiry > now()
		ORDER BY d.created_at DESC, d.id DESC`, org, user)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Device, error) {
		var d Device
		err := r.Scan(&d.ID, &d.Token, &d.Device, &d.IP, &d.CreatedAt, &d.LastSeenAt)
		return d, err
	})
}

// End deletes user's session id and returns its stored token;
// NotFound when user has no such session.
func (s *Devices) End(ctx context.Context, org, user, id uuid.UUID) (string, error) {
	tokens, err := deleteSessions(ctx, s.db, `DELETE FROM sessions WHERE token = (
		SELECT token FROM user_sessions WHERE org_id = $1 AND user_id = $2 AND id = $3) RETURNING token`, org, user, id)
	if err != nil {
		return "", err
	}
	if len(tokens) == 0 {
		return "", apperr.E(apperr.NotFound, "no such session")
	}
	return tokens[0], nil
}

// EndOthers deletes every session of user but the one stored under
// keep, devices recorded or not, and returns their stored tokens.
func (s *Devices) EndOthers(ctx context.Context, org, user uuid.UUID, keep string) ([]string, error) {
	return deleteSessions(ctx, s.db, `DELETE FROM sessions WHERE org_id = $1 AND user_id = $2 AND token <> $3 RETURNING token`,
		org, user, keep)
}

// SessionTouch is one session's housekeeping write, stored under Token
// (hashed, as scs stores it): a later Expiry for data that did not change
// (zero: none), and, when Seen, its last-seen time (now) and address IP.
type SessionTouch struct {
	Token  string
	Expiry time.Time
	Seen   bool
	IP     string
}

// Touch writes the touches of many sessions in one statement. Both are
// updates only: a session deleted meanwhile (a logout, an end elsewhere)
// stays deleted, and an expiry never moves back. A last-seen time that
// moved less than a minute ago is left alone. A session touched twice is
// written once: the later expiry, seen if either says so. Sessions are
// not tenant data: the token alone names one.
func (s *Devices) Touch(ctx context.Context, ts []SessionTouch) error {
	tokens, expiries, seen, ips := make([]string, len(ts)), make([]time.Time, len(ts)), make([]bool, len(ts)), make([]string, len(ts))
	for i, t := range ts {
		tokens[i], expiries[i], seen[i], ips[i] = t.Token, t.Expiry, t.Seen, t.IP
	}
	// A zero Expiry (year 1) is below every stored expiry: no update.
	_, err := s.db.Exec(ctx, `
		WITH v AS (
		    SELECT token, max(expiry) AS expiry, bool_or(seen) AS seen, max(ip) FILTER (WHERE seen) AS ip
		    FROM unnest($1::text[], $2::timestamptz[], $3::bool[], $4::text[]) AS v(token, expiry, seen, ip)
		    GROUP BY token),
		e AS (UPDATE sessions s SET expiry = v.expiry FROM v WHERE s.token = v.token AND s.expiry < v.expiry)
		UPDATE user_sessions u SET last_seen_at = now(), ip = v.ip FROM v
		 WHERE v.seen AND u.token = v.token AND u.last_seen_at < now() - interval '1 minute'`,
		tokens, expiries, seen, ips)
	return err
}

// deleteSessions runs a DELETE on sessions that returns the deleted
// tokens. The delete announces the ends to every process (migration 018).
func deleteSessions(ctx context.Context, db pg.DBTX, sql string, args ...any) ([]string, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
