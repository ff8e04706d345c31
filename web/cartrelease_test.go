package web

import (
	"net/http"
	"testing"

	"seatd/internal/testenv"
)

// TestCartReleaseMatchesEventAndReason: the cart's release route
// releases a hold of the path's event only (another event's path is 404
// and the hold stays), and staff releasing there give a reason like at
// the box office (422 without one).
func TestCartReleaseMatchesEventAndReason(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	other := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	buyer := s.as(tn.Org, tn.Buyers[0])
	path := func(event, h string) string { return "/e/" + event + "/holds/" + h }

	mine := coreHold(t, s.app, tn.Buyers[0], ev.ID, seats[0])[0]
	before := orgState(t, s.app, tn.Org.ID)
	buyer.do("DELETE", path(other.ID.String(), mine.ID.String()), nil).want(t, http.StatusNotFound)
	if orgState(t, s.app, tn.Org.ID) != before {
		t.Fatal("a release through another event's path changed something")
	}
	buyer.do("DELETE", path(ev.ID.String(), mine.ID.String()), nil).want(t, http.StatusOK)

	theirs := coreHold(t, s.app, tn.Buyers[0], ev.ID, seats[1])[0]
	staff := s.as(tn.Org, tn.BoxOffice)
	before = orgState(t, s.app, tn.Org.ID)
	staff.do("DELETE", path(ev.ID.String(), theirs.ID.String()), nil).want(t, http.StatusUnprocessableEntity)
	staff.do("DELETE", path(other.ID.String(), theirs.ID.String())+"?reason=customer+called", nil).want(t, http.StatusNotFound)
	if orgState(t, s.app, tn.Org.ID) != before {
		t.Fatal("a refused staff release changed something")
	}
	staff.do("DELETE", path(ev.ID.String(), theirs.ID.String())+"?reason=customer+called", nil).want(t, http.StatusOK)
	var n int
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE org_id = $1 AND entity_id = $2 AND data::text LIKE '%customer called%'`,
		tn.Org.ID, theirs.ID).Scan(&n); err != nil || n == 0 {
		t.Fatalf("audit rows with the reason: %d (%v)", n, err)
	}
}
