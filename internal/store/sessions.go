package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// DeleteExpiredSessions removes session rows past their expiry (the scs
// layout of the sessions table) and reports how many went. Sessions are not
// tenant data: a row holds only an opaque token and the encoded session.
func (s *Accounts) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM sessions WHERE expiry < now()`)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// FindSession returns the data and expiry of the live session stored under
// token (hashed, as scs stores it), and false when there is none or it has
// expired: what scs's Postgres store reads, with the expiry a cache needs
// to enforce the idle timeout itself.
func (s *Accounts) FindSession(ctx context.Context, token string) (data []byte, expiry time.Time, found bool, err error) {
	err = s.db.QueryRow(ctx, `SELECT data, expiry FROM sessions WHERE token = $1 AND current_timestamp < expiry`, token).
		Scan(&data, &expiry)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, time.Time{}, false, nil
	}
	if err != nil {
		return nil, time.Time{}, false, err
	}
	return data, expiry, true, nil
}

// SessionExpiry answers when the session stored under token (as scs
// stores it: hashed) expires, and false when it does not exist or has
// expired. Sessions are not tenant data: the token alone names one.
func (s *Accounts) SessionExpiry(ctx context.Context, token string) (time.Time, bool, error) {
	var expiry time.Time
	err := s.db.QueryRow(ctx, `SELECT expiry FROM sessions WHERE token = $1 AND expiry > now()`, token).Scan(&expiry)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return expiry, true, nil
}
