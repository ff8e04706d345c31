package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/web/api"
)

// TestLockTimeoutAnswersBusy: a request whose statement waits on a row
// lock past the pool's lock_timeout (here another transaction keeps the
// buyer's hold row locked) is answered 503 unavailable with Retry-After,
// in JSON and as a page, not as an internal error; it writes nothing, and
// the same request succeeds once the lock is gone.
func TestLockTimeoutAnswersBusy(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) { c.PGLockTimeout = 200 * time.Millisecond })
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	e := "/api/v1/events/" + ev.ID.String()
	buyer := s.as(tn.Org, tn.Buyers[0])
	var h holdOf
	buyer.do("POST", e+"/holds", map[string]any{"seat_id": seats[0].String()}).want(t, http.StatusCreated).json(t, &h)

	// Another change to the hold, still being written: its row is locked
	// until lock ends.
	ctx := context.Background()
	tx, err := a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	locked := true
	unlock := func() {
		if locked {
			locked = false
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer unlock()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM seat_holds WHERE org_id = $1 AND id = $2 FOR UPDATE`, tn.Org.ID, h.ID); err != nil {
		t.Fatal(err)
	}

	before := orgState(t, a, tn.Org.ID)
	key := "busy-" + h.ID.String()
	body := map[string]any{"hold_ids": []string{h.ID.String()}}
	r := buyer.do("POST", e+"/purchase", body, "Idempotency-Key", key)
	eb := r.wantErr(t, http.StatusServiceUnavailable, "unavailable")
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After %q, want 1", got)
	}
	if !strings.Contains(eb.Message, "try again") {
		t.Fatalf("message %q does not say to try again", eb.Message)
	}
	// The cart's release button, a page: the same answer as a page.
	p := buyer.do("DELETE", "/e/"+ev.ID.String()+"/holds/"+h.ID.String(), nil).want(t, http.StatusServiceUnavailable)
	if p.header.Get("Retry-After") != "1" || !strings.Contains(string(p.body), "try again in a moment") {
		t.Fatalf("page answer: Retry-After %q, body %.300s", p.header.Get("Retry-After"), p.body)
	}
	if after := orgState(t, a, tn.Org.ID); after != before {
		t.Fatalf("busy requests wrote: %s -> %s", before, after)
	}
	var bookings int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM bookings WHERE org_id = $1`, tn.Org.ID).Scan(&bookings); err != nil {
		t.Fatal(err)
	}
	if bookings != 0 {
		t.Fatalf("%d bookings after a busy purchase", bookings)
	}

	// Sent again once the other change is done: bought.
	unlock()
	var b api.BookingJSON
	buyer.do("POST", e+"/purchase", body, "Idempotency-Key", key).want(t, http.StatusCreated).json(t, &b)
	if b.Status != "confirmed" || len(b.Tickets) != 1 || b.Tickets[0].SeatID != seats[0] {
		t.Fatalf("booking %+v", b)
	}
}
