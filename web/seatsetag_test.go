package web

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/api"
)

// TestSeatListETagFollowsChanges: the seat list's ETag changes with a
// hold, a release, an expiry, a sale, and a change committed by another
// process that only the change feed brings (a cancel written straight to
// Postgres, never published); between changes, repeated reads are 304.
func TestSeatListETagFollowsChanges(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	testenv.Background(t, s.app) // the reaper and the change feed's follower
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	e := "/api/v1/events/" + ev.ID.String()
	buyer := s.as(tn.Org, tn.Buyers[0])

	// read answers the seat list's ETag and each seat's status.
	read := func() (string, map[uuid.UUID]string) {
		t.Helper()
		r := buyer.do("GET", e+"/seats", nil, "Accept-Encoding", "identity").want(t, http.StatusOK)
		var list struct {
			Seats []struct {
				ID     uuid.UUID `json:"id"`
				Status string    `json:"status"`
			} `json:"seats"`
		}
		r.json(t, &list)
		st := make(map[uuid.UUID]string, len(list.Seats))
		for _, x := range list.Seats {
			st[x.ID] = x.Status
		}
		return r.header.Get("ETag"), st
	}
	unchanged := func(etag string) {
		t.Helper()
		for range 2 {
			r := buyer.do("GET", e+"/seats", nil, "Accept-Encoding", "identity", "If-None-Match", etag)
			if r.status != http.StatusNotModified || r.header.Get("ETag") != etag {
				t.Fatalf("repeat with no change: %d, ETag %q; want 304, %q", r.status, r.header.Get("ETag"), etag)
			}
		}
	}
	// changed waits for the list to show seat in status under a new ETag.
	changed := func(what, before string, seat uuid.UUID, status string) string {
		t.Helper()
		var etag string
		var st map[uuid.UUID]string
		testsvc.Eventually(t, 10*time.Second, what+": seat "+status+" under a new ETag", func() bool {
			etag, st = read()
			return etag != before && st[seat] == status
		})
		unchanged(etag)
		return etag
	}

	etag, _ := read()
	unchanged(etag)

	var h holdOf
	buyer.do("POST", e+"/holds", map[string]string{"seat_id": seats[0].String()}).want(t, http.StatusCreated).json(t, &h)
	etag = changed("hold", etag, seats[0], "held")

	buyer.do("DELETE", "/api/v1/holds/"+h.ID.String(), nil).want(t, http.StatusNoContent)
	etag = changed("release", etag, seats[0], "available")

	buyer.do("POST", e+"/holds", map[string]string{"seat_id": seats[1].String()}).want(t, http.StatusCreated).json(t, &h)
	etag = changed("hold", etag, seats[1], "held")
	if _, err := s.app.Pool.Exec(context.Background(),
		`UPDATE seat_holds SET created_at = now() - interval '1 hour', held_until = now() - interval '1 second' WHERE id = $1`, h.ID); err != nil {
		t.Fatal(err)
	}
	etag = changed("expiry", etag, seats[1], "available")

	buyer.do("POST", e+"/holds", map[string]string{"seat_id": seats[2].String()}).want(t, http.StatusCreated).json(t, &h)
	etag = changed("hold", etag, seats[2], "held")
	var b api.BookingJSON
	buyer.do("POST", e+"/purchase", map[string]any{"hold_ids": []string{h.ID.String()}}, "Idempotency-Key", uuid.NewString()).
		want(t, http.StatusCreated).json(t, &b)
	etag = changed("sale", etag, seats[2], "sold")

	// Another process's cancel: committed, never published, so this
	// process's cache learns it from the change feed alone.
	if _, _, err := s.app.Store.Bookings.Cancel(context.Background(), tn.Org.ID, b.ID, tn.BoxOffice.ID, nil, "elsewhere"); err != nil {
		t.Fatal(err)
	}
	changed("change from the feed", etag, seats[2], "available")
}
