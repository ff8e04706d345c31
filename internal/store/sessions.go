package store

import "context"

// DeleteExpiredSessions removes session rows past their expiry (the scs
// layout of the sessions table) and reports how many went. Sessions are not
// tenant data: a row holds only an opaque token and the encoded session.
func (s *Store) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM sessions WHERE expiry < now()`)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
