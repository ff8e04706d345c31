package web

import (
	"net/http"
	"strings"
	"testing"

	"seatd/internal/testenv"
)

// TestChooseSeatsAPI: best available through the hold route, the orphan
// refusal naming the seat, malformed bodies (422, nothing written) and
// another organization's event (404).
func TestChooseSeatsAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn, other := testenv.NewTenant(t, s.app, 1), testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 2, 6)
	if _, err := s.app.Pool.Exec(t.Context(), `UPDATE events SET orphan_rule = 'strict' WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID) // A-1-1..6, A-2-1..6
	path := "/api/v1/events/" + ev.ID.String() + "/holds"
	c := s.as(tn.Org, tn.Buyers[0])

	for _, body := range []map[string]any{
		{"best_available": map[string]any{"count": 0}},
		{"best_available": map[string]any{"count": 101}},
		{"best_available": map[string]any{"count": 2}, "seat_id": seats[0].String()},
		{"best_available": map[string]any{"count": 2, "category": "nope"}},
		{"best_available": map[string]any{"count": 2, "section": "Z"}},
		{"best_available": map[string]any{"count": 2}, "with_companion": true},
	} {
		e := c.do("POST", path, body).wantErr(t, http.StatusUnprocessableEntity, "invalid")
		if len(e.Fields) == 0 {
			t.Errorf("%v: 422 without fields", body)
		}
	}
	c.do("POST", path, raw{"application/json", []byte(`{"best_available":{"count":"two"}}`)}).wantErr(t, http.StatusUnprocessableEntity, "invalid")
	if n := orgRows(t, s.app, "seat_holds", tn.Org.ID); n != 0 {
		t.Fatalf("%d holds written by refused requests", n)
	}
	s.as(other.Org, other.Buyers[0]).do("POST", path, map[string]any{"best_available": map[string]any{"count": 2}}).
		wantErr(t, http.StatusNotFound, "not_found")

	// Seat 2 of the back row alone would leave seat 1 alone at the row's end.
	e := c.do("POST", path, map[string]string{"seat_id": seats[7].String()}).wantErr(t, http.StatusConflict, "orphan_seat")
	if len(e.Seats) != 1 || e.Seats[0] != seats[6].String() {
		t.Errorf("orphan refusal names %v, want seat %v", e.Seats, seats[6])
	}
	var got struct {
		Holds []struct {
			SeatID string `json:"seat_id"`
		} `json:"holds"`
	}
	c.do("POST", path, map[string]any{"best_available": map[string]any{"count": 4}}).want(t, http.StatusCreated).json(t, &got)
	// The centre 2–5 of the front row would leave 1 and 6 alone: 1–4 (as
	// central as 3–6, and first) it is.
	want := map[string]bool{seats[0].String(): true, seats[1].String(): true, seats[2].String(): true, seats[3].String(): true}
	for _, h := range got.Holds {
		if !want[h.SeatID] {
			t.Errorf("best 4 of a free front row of 6 under the orphan rule: got %v, want 1–4", got.Holds)
			break
		}
	}
	c.do("POST", path, map[string]any{"best_available": map[string]any{"count": 2}}).want(t, http.StatusCreated).json(t, &got)
	if len(got.Holds) != 2 || got.Holds[0].SeatID != seats[4].String() || got.Holds[1].SeatID != seats[5].String() {
		t.Errorf("best 2: %v, want front row 5–6", got.Holds)
	}
	// 5 of the back row's 6 would leave one alone, and no split avoids it.
	s.as(tn.Org, tn.Buyers[0]).do("POST", path, map[string]any{"best_available": map[string]any{"count": 5}}).
		wantErr(t, http.StatusConflict, "not_enough_seats")
}

// TestBestAvailableKeyed: the server picks best-available seats, so a
// repeated request would hold more. With the same Idempotency-Key a repeat
// answers 200 with the first request's holds; the key with another request
// is 422 idempotency_mismatch and a malformed key 422 invalid, nothing
// written. The map's best-seats and standing-places forms carry the key
// their script gives a request in a form field, with the same effect.
func TestBestAvailableKeyed(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 3, 10)
	path := "/api/v1/events/" + ev.ID.String() + "/holds"
	c := s.as(tn.Org, tn.Buyers[0])
	best := func(n int) map[string]any { return map[string]any{"best_available": map[string]any{"count": n}} }
	var first, again struct {
		Holds []struct {
			ID string `json:"id"`
		} `json:"holds"`
	}
	c.do("POST", path, best(2), "Idempotency-Key", "best-7").want(t, http.StatusCreated).json(t, &first)
	c.do("POST", path, best(2), "Idempotency-Key", "best-7").want(t, http.StatusOK).json(t, &again)
	if len(first.Holds) != 2 || len(again.Holds) != 2 || first.Holds[0].ID != again.Holds[0].ID || first.Holds[1].ID != again.Holds[1].ID {
		t.Fatalf("repeat answered %v, the first %v", again.Holds, first.Holds)
	}
	c.do("POST", path, best(3), "Idempotency-Key", "best-7").wantErr(t, http.StatusUnprocessableEntity, "idempotency_mismatch")
	if e := c.do("POST", path, best(3), "Idempotency-Key", "two words").wantErr(t, http.StatusUnprocessableEntity, "invalid"); e.Fields["Idempotency-Key"] == "" {
		t.Errorf("a malformed key's refusal names no field: %+v", e)
	}
	if n := orgRows(t, s.app, "seat_holds", tn.Org.ID); n != 2 {
		t.Fatalf("%d holds after a keyed request, its repeat and two refusals; want 2", n)
	}

	// The map's form: the same key twice holds once; no key (no script)
	// holds each time; a malformed key is refused in the cart.
	form := func(v string) raw { return raw{contentType: "application/x-www-form-urlencoded", body: []byte(v)} }
	bestForm := "/e/" + ev.ID.String() + "/best"
	for range 2 {
		c.do("POST", bestForm, form("count=2&key=f1f2f3")).want(t, http.StatusOK)
	}
	if n := orgRows(t, s.app, "seat_holds", tn.Org.ID); n != 4 {
		t.Fatalf("%d holds after the form sent one request twice; want 4", n)
	}
	c.do("POST", bestForm, form("count=1")).want(t, http.StatusOK)
	c.do("POST", bestForm, form("count=1")).want(t, http.StatusOK)
	if n := orgRows(t, s.app, "seat_holds", tn.Org.ID); n != 6 {
		t.Fatalf("%d holds after two requests without a key; want 6", n)
	}
	r := c.do("POST", bestForm, form("count=1&key=%01")).want(t, http.StatusOK)
	if !strings.Contains(string(r.body), "malformed request key") {
		t.Errorf("a malformed form key: cart says %s", r.body)
	}
	if n := orgRows(t, s.app, "seat_holds", tn.Org.ID); n != 6 {
		t.Fatalf("%d holds after a malformed form key; want 6", n)
	}
}
