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

// Seen moves the last-seen time and address of the session stored
// under token to now, unless it moved less than a minute ago.
func (s *Devices) Seen(ctx context.Context, token, ip string) error {
	_, err := s.db.Exec(ctx, `UPDATE user_sessions SET last_seen_at = now(), ip = $2
		WHERE token = $1 AND last_seen_at < now() - interval '1 minute'`, token, ip)
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
