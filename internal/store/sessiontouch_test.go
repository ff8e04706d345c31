package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestSessionTouch writes many sessions' housekeeping in one statement
// against a real Postgres: a later expiry moves, an earlier one does not;
// a last-seen time older than a minute moves with its address, a recent
// one stays; a session deleted before its touch stays deleted; a session
// touched several times in one batch gets the latest expiry.
func TestSessionTouch(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	add := func(token string, expiry time.Time, seenAgo time.Duration) {
		t.Helper()
		if _, err := a.Pool.Exec(ctx, `INSERT INTO sessions (token, data, expiry) VALUES ($1, '{"values":{}}', $2)`, token, expiry); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Pool.Exec(ctx, `INSERT INTO user_sessions (token, org_id, user_id, device, ip, last_seen_at)
			VALUES ($1, $2, $2, 'test', '192.0.2.0/24', now() - $3::interval)`, token, uuid.New(), seenAgo.String()); err != nil {
			t.Fatal(err)
		}
	}
	p := uuid.NewString()[:8] + "-"
	add(p+"later", now.Add(time.Hour), time.Hour)
	add(p+"earlier", now.Add(time.Hour), 10*time.Second)
	add(p+"gone", now.Add(time.Hour), time.Hour)
	if _, err := a.Pool.Exec(ctx, `DELETE FROM sessions WHERE token = $1`, p+"gone"); err != nil {
		t.Fatal(err)
	}
	err := a.Store.Devices.Touch(ctx, []store.SessionTouch{
		{Token: p + "later", Expiry: now.Add(2 * time.Hour), Seen: true, IP: "198.51.100.0/24"},
		{Token: p + "later", Seen: true, IP: "198.51.100.0/24"},
		{Token: p + "later", Expiry: now.Add(90 * time.Minute)},
		{Token: p + "earlier", Expiry: now.Add(time.Minute), Seen: true, IP: "198.51.100.0/24"},
		{Token: p + "gone", Expiry: now.Add(2 * time.Hour), Seen: true, IP: "198.51.100.0/24"},
	})
	if err != nil {
		t.Fatal(err)
	}
	read := func(token string) (expiry time.Time, ip string, seenAgo time.Duration, found bool) {
		t.Helper()
		var secs float64
		err := a.Pool.QueryRow(ctx, `SELECT s.expiry, u.ip, extract(epoch FROM now() - u.last_seen_at)
			FROM sessions s JOIN user_sessions u USING (token) WHERE token = $1`, token).Scan(&expiry, &ip, &secs)
		if err != nil {
			return time.Time{}, "", 0, false
		}
		return expiry.UTC(), ip, time.Duration(secs * float64(time.Second)), true
	}
	if exp, ip, ago, ok := read(p + "later"); !ok || !exp.Equal(now.Add(2*time.Hour)) || ip != "198.51.100.0/24" || ago > 5*time.Second {
		t.Errorf("later: expiry %s, ip %s, seen %s ago, found %v; want the new expiry, the new address, seen now", exp, ip, ago, ok)
	}
	if exp, ip, ago, ok := read(p + "earlier"); !ok || !exp.Equal(now.Add(time.Hour)) || ip != "192.0.2.0/24" || ago < 10*time.Second {
		t.Errorf("earlier: expiry %s, ip %s, seen %s ago, found %v; want the expiry and last-seen time left as they were", exp, ip, ago, ok)
	}
	var n int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE token = $1`, p+"gone").Scan(&n); err != nil || n != 0 {
		t.Errorf("a touch of a deleted session: %d rows, %v; want none", n, err)
	}
}
