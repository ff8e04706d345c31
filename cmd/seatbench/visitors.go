package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"
)

// seedVisitors makes n buyer accounts of the bench organization, each
// signed in with a session of its own, written straight into Postgres:
// the users in one INSERT, their sessions and device rows by COPY, in a
// few seconds for 100 000. Signing 100 000 accounts in through POST /login
// would spend minutes of both cores on password hashes and session
// writes before the waiting room is measured at all; what is measured is
// the room, and a session seatd reads from its store is the same whoever
// wrote it. The rows are what a sign-in writes (web/session: scs's
// sessions row under the SHA-256 of the cookie's token, the values
// SignIn puts, and the user_sessions row naming the device).
func (fx *fixture) seedVisitors(ctx context.Context, n int, tag string) ([]*session, error) {
	cookieName, _, ok := strings.Cut(fx.organizer.cookie, "=")
	if !ok {
		return nil, fmt.Errorf("organizer cookie %q has no name", fx.organizer.cookie)
	}
	var orgName string
	if err := fx.db.QueryRow(ctx, `SELECT name FROM organizations WHERE id = $1`, fx.orgID).Scan(&orgName); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(benchPassword), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	rows, err := fx.db.Query(ctx, `
		INSERT INTO users (org_id, email, role, password_hash, email_verified_at)
		SELECT $1, $2 || g || '@' || $3 || '.example', 'buyer', $4, now() FROM generate_series(1, $5) g
		RETURNING id::text, email`, fx.orgID, tag, fx.slug, string(hash), n)
	if err != nil {
		return nil, fmt.Errorf("insert %s accounts: %w", tag, err)
	}
	var out []*session
	for rows.Next() {
		s := &session{}
		if err := rows.Scan(&s.userID, &s.email); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// As sign-ins over the last ten minutes leave them: the deadline the
	// lifetime allows, the stored expiry the idle timeout's (seatd's
	// default, 2 h) from each one's sign-in, so their first request
	// refreshes those older than a minute, and the next refreshes come
	// due a minute after each one's request, not all at one instant.
	deadline := time.Now().Add(12 * time.Hour).UTC()
	signedIn := func() time.Time {
		return time.Now().Add(-time.Duration(mrand.Int64N(int64(10 * time.Minute)))) // #nosec G404 -- a spread, not a secret
	}
	sessions := make([][]any, len(out))
	devices := make([][]any, len(out))
	org := uuid.MustParse(fx.orgID)
	for i, s := range out {
		var raw [32]byte
		_, _ = rand.Read(raw[:])
		token := base64.RawURLEncoding.EncodeToString(raw[:])
		sum := sha256.Sum256([]byte(token))
		stored := base64.RawURLEncoding.EncodeToString(sum[:])
		data, err := json.Marshal(map[string]any{"deadline": deadline, "values": map[string]string{
			"org_id": fx.orgID, "org_slug": fx.slug, "org_name": orgName, "user_id": s.userID,
			"email": s.email, "role": "buyer", "email_verified": "1"}})
		if err != nil {
			return nil, err
		}
		s.cookie = cookieName + "=" + token
		sessions[i] = []any{stored, data, signedIn().Add(2 * time.Hour).UTC()}
		devices[i] = []any{stored, org, uuid.MustParse(s.userID), "seatbench", "127.0.0.0/24"}
	}
	if _, err := fx.db.CopyFrom(ctx, pgx.Identifier{"sessions"}, []string{"token", "data", "expiry"}, pgx.CopyFromRows(sessions)); err != nil {
		return nil, fmt.Errorf("copy %s sessions: %w", tag, err)
	}
	if _, err := fx.db.CopyFrom(ctx, pgx.Identifier{"user_sessions"}, []string{"token", "org_id", "user_id", "device", "ip"}, pgx.CopyFromRows(devices)); err != nil {
		return nil, fmt.Errorf("copy %s devices: %w", tag, err)
	}
	for _, q := range []string{`VACUUM (ANALYZE) users`, `VACUUM (ANALYZE) sessions`, `VACUUM (ANALYZE) user_sessions`, `CHECKPOINT`} {
		if _, err := fx.db.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	return out, nil
}
