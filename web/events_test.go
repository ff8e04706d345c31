package web

import (
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/testenv"
)

// TestEventsAPI: an organizer creates an event from a chart, publishes it
// and a buyer holds and buys on it with prices; malformed bodies are 422
// naming the fields and write nothing; lifecycle moves not allowed are
// 409; another organization's chart or event is 404; the exports list
// what happened.
func TestEventsAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn, other := testenv.NewTenant(t, a, 1), testenv.NewTenant(t, a, 1)
	v := testenv.NewChart(t, a, tn.Org.ID, 2, 10)
	foreign := testenv.NewChart(t, a, other.Org.ID, 2, 10)
	org, buyer := s.as(tn.Org, tn.Organizer), s.as(tn.Org, tn.Buyers[0])
	now := time.Now().UTC()
	body := func() map[string]any {
		return map[string]any{"name": "Spring concert", "venue": "Hall", "starts_at": now.Add(72 * time.Hour).Format(time.RFC3339),
			"time_zone": "America/New_York", "chart_id": v.ChartID.String(),
			"on_sale_at": now.Add(-time.Minute).Format(time.RFC3339), "sales_end_at": now.Add(48 * time.Hour).Format(time.RFC3339),
			"prices": []map[string]any{{"category": "front", "price_minor": 4000, "currency": "USD"},
				{"category": "back", "price_minor": 1500, "currency": "USD"}},
			"hold_ttl": 300, "max_holds_per_buyer": 4}
	}
	events := func() int { return orgRows(t, a, "events", tn.Org.ID) }

	// Malformed: each names its fields, none writes.
	for _, tc := range []struct {
		name   string
		mod    func(map[string]any)
		fields []string
	}{
		{"missing name and chart", func(b map[string]any) { delete(b, "name"); delete(b, "chart_id") }, []string{"name", "chart_id"}},
		{"bad zone and time", func(b map[string]any) { b["time_zone"] = "Nowhere/Else"; b["starts_at"] = "soon" }, []string{"time_zone", "starts_at"}},
		{"window backwards", func(b map[string]any) { b["sales_end_at"] = now.Add(-time.Hour).Format(time.RFC3339) }, []string{"sales_end_at"}},
		{"price missing", func(b map[string]any) {
			b["prices"] = []map[string]any{{"category": "front", "price_minor": 1, "currency": "USD"}}
		}, []string{"prices"}},
		{"price wrong type", func(b map[string]any) { b["prices"] = "free" }, []string{"prices"}},
		{"unknown field", func(b map[string]any) { b["org_id"] = other.Org.ID }, []string{"org_id"}},
		{"hold_ttl as text", func(b map[string]any) { b["hold_ttl"] = "5m" }, []string{"hold_ttl"}},
	} {
		b := body()
		tc.mod(b)
		e := org.do("POST", "/api/v1/events", b).wantErr(t, http.StatusUnprocessableEntity, "invalid")
		for _, f := range tc.fields {
			if e.Fields[f] == "" {
				t.Errorf("%s: no message for %s in %v", tc.name, f, e.Fields)
			}
		}
	}
	b := body()
	b["chart_id"] = foreign.ChartID.String()
	org.do("POST", "/api/v1/events", b).wantErr(t, http.StatusNotFound, "not_found")
	buyer.do("POST", "/api/v1/events", body()).want(t, http.StatusForbidden)
	if n := events(); n != 0 {
		t.Fatalf("%d events written by refused requests", n)
	}

	var ev struct {
		ID      uuid.UUID `json:"id"`
		Status  string    `json:"status"`
		Seats   int       `json:"seats"`
		HoldTTL int       `json:"hold_ttl"`
		Prices  []struct {
			Category   string `json:"category"`
			PriceMinor int64  `json:"price_minor"`
		} `json:"prices"`
	}
	org.do("POST", "/api/v1/events", body()).want(t, http.StatusCreated).json(t, &ev)
	if ev.Status != "draft" || ev.Seats != 20 || ev.HoldTTL != 300 || len(ev.Prices) != 2 {
		t.Fatalf("created %+v", ev)
	}
	path := "/api/v1/events/" + ev.ID.String()

	var seats struct {
		Seats []struct {
			ID         uuid.UUID `json:"id"`
			Category   string    `json:"category"`
			PriceMinor int64     `json:"price_minor"`
			Currency   string    `json:"currency"`
			Accessible bool      `json:"accessible"`
		} `json:"seats"`
	}
	buyer.do("GET", path+"/seats", nil).want(t, http.StatusOK).json(t, &seats)
	if st := seats.Seats[0]; st.Category != "front" || st.PriceMinor != 4000 || st.Currency != "USD" || !st.Accessible {
		t.Fatalf("first seat %+v", st)
	}
	seat := seats.Seats[5].ID.String()

	// A draft is not on sale.
	buyer.do("POST", path+"/holds", map[string]any{"seat_id": seat}).wantErr(t, http.StatusConflict, "not_on_sale")

	org.do("PATCH", path, map[string]any{"status": "on_sale"}).want(t, http.StatusOK)
	org.do("PATCH", path, map[string]any{"status": "draft"}).wantErr(t, http.StatusConflict, "conflict")
	org.do("PATCH", path, map[string]any{"max_holds_per_buyer": "many"}).wantErr(t, http.StatusUnprocessableEntity, "invalid")
	org.do("PATCH", path, map[string]any{"chart_id": v.ChartID.String()}).wantErr(t, http.StatusUnprocessableEntity, "invalid")

	// Another organization sees nothing of it.
	stranger := s.as(other.Org, other.Organizer)
	stranger.do("GET", path, nil).wantErr(t, http.StatusNotFound, "not_found")
	stranger.do("PATCH", path, map[string]any{"status": "closed"}).wantErr(t, http.StatusNotFound, "not_found")
	for _, kind := range []string{"seats", "bookings", "audit"} {
		stranger.do("GET", path+"/exports/"+kind+".csv", nil).wantErr(t, http.StatusNotFound, "not_found")
	}

	var h holdOf
	buyer.do("POST", path+"/holds", map[string]any{"seat_id": seat}).want(t, http.StatusCreated).json(t, &h)
	var occ struct {
		Categories []struct {
			Category    string `json:"category"`
			Held        int    `json:"held"`
			Sold        int    `json:"sold"`
			Available   int    `json:"available"`
			RevenueHeld int64  `json:"revenue_held"`
			RevenueSold int64  `json:"revenue_sold"`
		} `json:"categories"`
	}
	org.do("GET", path+"/occupancy", nil).want(t, http.StatusOK).json(t, &occ)
	if len(occ.Categories) != 2 || occ.Categories[0].Held != 1 || occ.Categories[0].RevenueHeld != 4000 || occ.Categories[1].Available != 10 {
		t.Fatalf("occupancy by category %+v", occ.Categories)
	}
	var booking struct {
		ID      uuid.UUID `json:"id"`
		Tickets []struct {
			PriceMinor int64  `json:"price_minor"`
			Currency   string `json:"currency"`
		} `json:"tickets"`
	}
	buyer.do("POST", path+"/purchase", map[string]any{"hold_ids": []string{h.ID.String()}}, "Idempotency-Key", "k1").
		want(t, http.StatusCreated).json(t, &booking)
	if len(booking.Tickets) != 1 || booking.Tickets[0].PriceMinor != 4000 || booking.Tickets[0].Currency != "USD" {
		t.Fatalf("booking %+v", booking)
	}
	// A new price changes what the next buyer pays, not what was paid.
	org.do("PATCH", path, map[string]any{"prices": []map[string]any{{"category": "front", "price_minor": 9900, "currency": "USD"}}}).
		want(t, http.StatusOK)
	org.do("GET", path+"/occupancy", nil).want(t, http.StatusOK).json(t, &occ)
	if occ.Categories[0].Sold != 1 {
		t.Errorf("sold in front %d, want 1", occ.Categories[0].Sold)
	}

	rowsOf := func(kind string) [][]string {
		t.Helper()
		r := org.do("GET", path+"/exports/"+kind+".csv", nil).want(t, http.StatusOK)
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
			t.Errorf("%s: Content-Type %q", kind, ct)
		}
		rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		return rows
	}
	seatRows := rowsOf("seats")
	if len(seatRows) != 21 || seatRows[0][0] != "section" {
		t.Fatalf("seats.csv has %d rows, header %v", len(seatRows), seatRows[0])
	}
	if got := seatRows[6]; got[3] != "sold" || got[4] != "front" || got[5] != "9900" || got[6] != "USD" {
		t.Errorf("seats.csv sold seat row %v", got)
	}
	bookingRows := rowsOf("bookings")
	if len(bookingRows) != 2 || bookingRows[1][0] != booking.ID.String() || bookingRows[1][2] != tn.Buyers[0].Email ||
		bookingRows[1][9] != "4000" || bookingRows[1][10] != "USD" {
		t.Errorf("bookings.csv %v", bookingRows)
	}
	actions := map[string]bool{}
	for _, r := range rowsOf("audit")[1:] {
		actions[r[2]] = true
	}
	for _, want := range []string{"event.created", "event.updated", "hold.created", "seat.sold"} {
		if !actions[want] {
			t.Errorf("audit.csv lacks %s: %v", want, actions)
		}
	}
	buyer.do("GET", path+"/exports/seats.csv", nil).want(t, http.StatusForbidden)

	org.do("PATCH", path, map[string]any{"status": "closed"}).want(t, http.StatusOK)
	buyer.do("POST", path+"/holds", map[string]any{"seat_id": seats.Seats[7].ID.String()}).wantErr(t, http.StatusConflict, "not_on_sale")
	org.do("PATCH", path, map[string]any{"status": "on_sale"}).wantErr(t, http.StatusConflict, "conflict")
}
