package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/testenv"
)

type waitlistOf struct {
	ID       uuid.UUID `json:"id"`
	Position int       `json:"position"`
	Status   string    `json:"status"`
	Section  string    `json:"section"`
	HoldIDs  []string  `json:"hold_ids"`
}

// TestWaitlistAPI: join (201 with a position), list, a freed seat offered
// live to the first in line (the seat and the cart entry with its note on
// the buyer's socket), the staff view, leave; malformed bodies are 422
// with fields and write nothing; another org gets 404.
func TestWaitlistAPI(t *testing.T) {
	s := newTestServer(t, nil)
	testenv.Background(t, s.app)
	a := s.app
	tn, other := testenv.NewTenant(t, a, 3), testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[0]
	h := coreHold(t, a, tn.Buyers[0], ev.ID, seat)[0]
	path := "/api/v1/events/" + ev.ID.String() + "/waitlist"
	first, second := s.as(tn.Org, tn.Buyers[1]), s.as(tn.Org, tn.Buyers[2])

	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "count"},
		{map[string]any{"count": 0}, "count"},
		{map[string]any{"count": 101}, "count"},
		{map[string]any{"count": "two"}, "count"},
		{map[string]any{"count": 1, "section": "Z"}, "section"},
		{map[string]any{"count": 1, "category": "gold"}, "category"},
	} {
		e := first.do("POST", path, c.body).wantErr(t, http.StatusUnprocessableEntity, "invalid")
		if e.Fields[c.field] == "" {
			t.Fatalf("%v: fields %v, want %s", c.body, e.Fields, c.field)
		}
	}
	if n := orgRows(t, a, "waitlist_entries", tn.Org.ID); n != 0 {
		t.Fatalf("%d entries written by refused requests", n)
	}
	s.as(other.Org, other.Buyers[0]).do("POST", path, map[string]any{"count": 1}).wantErr(t, http.StatusNotFound, "not_found")
	s.as(tn.Org, tn.BoxOffice).do("POST", path, map[string]any{"count": 1}).want(t, http.StatusForbidden)

	// The map's place-in-line panel polls only for a buyer in line.
	status := "/e/" + ev.ID.String() + "/waitlist"
	polls := func() bool {
		return strings.Contains(string(first.do("GET", status, nil).want(t, http.StatusOK).body), `hx-trigger="every 2s"`)
	}
	if polls() {
		t.Fatal("the waitlist panel polls for a buyer not in line")
	}
	var e1, e2 waitlistOf
	first.do("POST", path, map[string]any{"count": 1, "section": "A"}).want(t, http.StatusCreated).json(t, &e1)
	if !polls() {
		t.Fatal("the waitlist panel does not refresh the place in line")
	}
	second.do("POST", path, map[string]any{"count": 1}).want(t, http.StatusCreated).json(t, &e2)
	if e1.Position != 1 || e2.Position != 2 || e1.Section != "A" {
		t.Fatalf("entries %+v %+v, want positions 1 and 2", e1, e2)
	}
	first.do("POST", path, map[string]any{"count": 1}).wantErr(t, http.StatusConflict, "conflict")
	s.as(other.Org, other.Buyers[0]).do("DELETE", "/api/v1/waitlist/"+e1.ID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	second.do("DELETE", "/api/v1/waitlist/"+e1.ID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	s.as(other.Org, other.Organizer).do("GET", path, nil).wantErr(t, http.StatusNotFound, "not_found")
	var line struct {
		Waiting int          `json:"waiting"`
		First   []waitlistOf `json:"first"`
	}
	s.as(tn.Org, tn.Organizer).do("GET", path, nil).want(t, http.StatusOK).json(t, &line)
	if line.Waiting != 2 || len(line.First) != 2 || line.First[0].ID != e1.ID {
		t.Fatalf("staff view %+v", line)
	}
	if r := s.as(tn.Org, tn.Organizer).do("GET", "/admin/events/"+ev.ID.String()+"/waitlist", nil).want(t, http.StatusOK); !strings.Contains(string(r.body), `data-testid="waitlist-waiting">2<`) {
		t.Fatalf("dashboard waitlist panel: %s", r.body)
	}

	conn, _, err := s.socket(t, first, ev.ID, s.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Core.Release(context.Background(), actor(tn.Buyers[0]), h.ID, ""); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for the offer in the cart: %v", err)
		}
		if strings.Contains(string(msg), `id="cart-`+seat.String()+`"`) && strings.Contains(string(msg), `data-testid="offer-note"`) {
			break
		}
	}
	var mine struct {
		Entries []waitlistOf `json:"entries"`
	}
	first.do("GET", path+"/mine", nil).want(t, http.StatusOK).json(t, &mine)
	if len(mine.Entries) != 1 || mine.Entries[0].Status != "offered" || len(mine.Entries[0].HoldIDs) != 1 {
		t.Fatalf("mine after the offer: %+v", mine)
	}
	second.do("GET", path+"/mine", nil).want(t, http.StatusOK).json(t, &mine)
	if len(mine.Entries) != 1 || mine.Entries[0].Position != 1 {
		t.Fatalf("second in line after the offer: %+v", mine)
	}
	second.do("DELETE", "/api/v1/waitlist/"+e2.ID.String(), nil).want(t, http.StatusNoContent)
	second.do("GET", path+"/mine", nil).want(t, http.StatusOK).json(t, &mine)
	if len(mine.Entries) != 0 {
		t.Fatalf("entries after leaving: %+v", mine)
	}
}
