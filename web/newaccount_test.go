package web

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/testenv"
)

// TestNewAccountHoldCapAtTheEdge: the session of an account younger
// than SEATD_NEW_ACCOUNT_AGE carries the new accounts' hold cap from
// sign-in: its concurrent holds stop there (409 hold_limit) while the
// buyer cap is higher. The same person signed in once the account is old
// enough holds up to the buyer cap; the box office is not bound by it.
func TestNewAccountHoldCapAtTheEdge(t *testing.T) {
	t.Parallel()
	const young, buyerCap = 2, 6
	s := newTestServer(t, func(c *config.Config) {
		c.NewAccountAge = 24 * time.Hour
		c.NewAccountHoldCap = young
		c.MaxHoldsPerBuyer = buyerCap
	})
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 2, 10)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	u := tn.Buyers[0]
	path := "/api/v1/events/" + ev.ID.String() + "/holds"

	c := s.as(tn.Org, u)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range 8 {
		wg.Go(func() {
			r := c.do("POST", path, map[string]string{"seat_id": seats[i].String()})
			if r.status == http.StatusConflict {
				r.wantErr(t, http.StatusConflict, string(apperr.HoldLimit))
			}
			mu.Lock()
			statuses[r.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	active := func() int {
		var n int
		if err := s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND user_id = $2 AND status = 'active'`,
			ev.ID, u.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if statuses[http.StatusCreated] != young || active() != young {
		t.Fatalf("new account: answers %v, %d active; want %d holds", statuses, active(), young)
	}

	// Two days on, a new sign-in holds up to the buyer cap.
	if _, err := s.app.Pool.Exec(t.Context(), `UPDATE users SET created_at = now() - interval '2 days' WHERE org_id = $1 AND id = $2`,
		tn.Org.ID, u.ID); err != nil {
		t.Fatal(err)
	}
	later := s.as(tn.Org, u)
	for i := 8; i < 8+buyerCap-young; i++ {
		later.do("POST", path, map[string]string{"seat_id": seats[i].String()}).want(t, http.StatusCreated)
	}
	later.do("POST", path, map[string]string{"seat_id": seats[19].String()}).wantErr(t, http.StatusConflict, string(apperr.HoldLimit))

	// The box office, made just now too, holds for a customer past both.
	box := s.as(tn.Org, tn.BoxOffice)
	ids := []string{}
	for _, id := range seats[12:19] {
		ids = append(ids, id.String())
	}
	box.do("POST", path, map[string]any{"seat_ids": ids, "customer": map[string]string{"name": "Ada", "email": "ada@example.com"},
		"held_until": time.Now().Add(48 * time.Hour)}).want(t, http.StatusCreated)
	t.Logf("new account: %v; after two days: %d held; box office: %d seats", statuses, active(), len(ids))
}
