package web

import (
	"net/http"
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
