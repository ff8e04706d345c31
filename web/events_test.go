package web

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/money"
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
			"hold_ttl": 300, "max_holds_per_buyer": 4, "hold_extension": 120}
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
		{"hold_extension past an hour", func(b map[string]any) { b["hold_extension"] = 7200 }, []string{"hold_extension"}},
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
		Ext     int       `json:"hold_extension"`
		Prices  []struct {
			Category   string `json:"category"`
			PriceMinor int64  `json:"price_minor"`
		} `json:"prices"`
	}
	org.do("POST", "/api/v1/events", body()).want(t, http.StatusCreated).json(t, &ev)
	// 20 seats and the GA section's 100 places.
	if ev.Status != "draft" || ev.Seats != 120 || ev.HoldTTL != 300 || ev.Ext != 120 || len(ev.Prices) != 2 {
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
	// A draft is its organizers' until it is published: to a buyer it
	// does not exist.
	buyer.do("GET", path, nil).wantErr(t, http.StatusNotFound, "not_found")
	buyer.do("GET", path+"/seats", nil).wantErr(t, http.StatusNotFound, "not_found")
	if r := buyer.do("GET", "/e/"+ev.ID.String(), nil); r.status != http.StatusNotFound {
		t.Fatalf("a draft's map page to a buyer: %d", r.status)
	}
	// Nor its cart, waitlist or live socket, and joining its line writes
	// nothing.
	for _, p := range []string{"/e/" + ev.ID.String() + "/cart", "/e/" + ev.ID.String() + "/waitlist"} {
		if r := buyer.do("GET", p, nil); r.status != http.StatusNotFound {
			t.Fatalf("GET %s of a draft to a buyer: %d", p, r.status)
		}
	}
	if _, code := s.dialPath(t, buyer, "/live/events/"+ev.ID.String(), s.ts.URL); code != http.StatusNotFound {
		t.Fatalf("a draft's live socket to a buyer: %d", code)
	}
	if _, code := s.dialPath(t, org, "/live/events/"+ev.ID.String(), s.ts.URL); code != http.StatusSwitchingProtocols {
		t.Fatalf("a draft's live socket to its organizer: %d", code)
	}
	buyer.do("GET", path+"/waitlist/mine", nil).wantErr(t, http.StatusNotFound, "not_found")
	buyer.do("POST", path+"/waitlist", map[string]any{"count": 2}).wantErr(t, http.StatusNotFound, "not_found")
	var lined int
	if err := a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM waitlist_entries WHERE event_id = $1`, ev.ID).Scan(&lined); err != nil || lined != 0 {
		t.Fatalf("waitlist entries of a draft: %d (%v)", lined, err)
	}
	type listed struct {
		ID uuid.UUID `json:"id"`
	}
	var list struct {
		Events []listed `json:"events"`
	}
	buyer.do("GET", "/api/v1/events", nil).want(t, http.StatusOK).json(t, &list)
	if slices.ContainsFunc(list.Events, func(e listed) bool { return e.ID == ev.ID }) {
		t.Fatal("a draft listed to a buyer")
	}
	org.do("GET", path+"/seats", nil).want(t, http.StatusOK).json(t, &seats)
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
			Category         string           `json:"category"`
			Held             int              `json:"held"`
			Sold             int              `json:"sold"`
			Available        int              `json:"available"`
			RevenueHeld      int64            `json:"revenue_held"`
			RevenueSold      int64            `json:"revenue_sold"`
			RevenueSoldOther map[string]int64 `json:"revenue_sold_other"`
		} `json:"categories"`
	}
	org.do("GET", path+"/occupancy", nil).want(t, http.StatusOK).json(t, &occ)
	if len(occ.Categories) != 2 || occ.Categories[0].Held != 1 || occ.Categories[0].RevenueHeld != 4000 || occ.Categories[1].Available != 110 { // 10 seats and 100 GA places
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
	if c := occ.Categories[0]; c.Sold != 1 || c.RevenueSold != 4000 || c.RevenueSoldOther != nil {
		t.Errorf("front after the price change: %+v; want 1 sold for 4000 as paid", c)
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
	// A header, 20 seats and the GA section's 100 places (row GA, priced back).
	if len(seatRows) != 121 || seatRows[0][0] != "section" {
		t.Fatalf("seats.csv has %d rows, header %v", len(seatRows), seatRows[0])
	}
	if got := seatRows[120]; got[0] != "G" || got[1] != "GA" || got[2] != "100" || got[4] != "back" || got[5] != "1500" {
		t.Errorf("seats.csv last GA place row %v", got)
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

	// So does a new currency: what was paid in the old one is kept apart,
	// in the answer and on the dashboard.
	org.do("PATCH", path, map[string]any{"prices": []map[string]any{{"category": "front", "price_minor": 3000, "currency": "EUR"}}}).
		want(t, http.StatusOK)
	var h2 holdOf
	buyer.do("POST", path+"/holds", map[string]any{"seat_id": seats.Seats[6].ID.String()}).want(t, http.StatusCreated).json(t, &h2)
	buyer.do("POST", path+"/purchase", map[string]any{"hold_ids": []string{h2.ID.String()}}, "Idempotency-Key", "k2").
		want(t, http.StatusCreated)
	org.do("GET", path+"/occupancy", nil).want(t, http.StatusOK).json(t, &occ)
	if c := occ.Categories[0]; c.Sold != 2 || c.RevenueSold != 3000 || len(c.RevenueSoldOther) != 1 || c.RevenueSoldOther["USD"] != 4000 {
		t.Errorf("front after a sale in EUR: %+v; want 2 sold, 3000 in EUR and 4000 in USD", c)
	}
	soldCell := money.Format(3000, "EUR") + " + " + money.Format(4000, "USD")
	if page := org.do("GET", "/admin/events/"+ev.ID.String(), nil).want(t, http.StatusOK); !strings.Contains(string(page.body), soldCell) {
		t.Errorf("the dashboard does not show front's revenue sold as %q", soldCell)
	}
	// A cancelled ticket is revenue no more.
	s.as(tn.Org, tn.BoxOffice).do("POST", "/api/v1/bookings/"+booking.ID.String()+"/cancel", map[string]any{"reason": "refund"}).
		want(t, http.StatusOK)
	occ.Categories = nil
	org.do("GET", path+"/occupancy", nil).want(t, http.StatusOK).json(t, &occ)
	if c := occ.Categories[0]; c.Sold != 1 || c.RevenueSold != 3000 || c.RevenueSoldOther != nil {
		t.Errorf("front after the USD ticket was cancelled: %+v; want 1 sold, 3000 in EUR, nothing in USD", c)
	}

	org.do("PATCH", path, map[string]any{"status": "closed"}).want(t, http.StatusOK)
	buyer.do("POST", path+"/holds", map[string]any{"seat_id": seats.Seats[7].ID.String()}).wantErr(t, http.StatusConflict, "not_on_sale")
	org.do("PATCH", path, map[string]any{"status": "on_sale"}).wantErr(t, http.StatusConflict, "conflict")
}

// TestEventFormPages: the organizer's form refuses bad input with a 422
// page naming each field and writes nothing; a good form makes a draft in
// the venue's time zone; buyers cannot open the pages; another
// organization's event is 404.
func TestEventFormPages(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn, other := testenv.NewTenant(t, a, 1), testenv.NewTenant(t, a, 0)
	v := testenv.NewChart(t, a, tn.Org.ID, 2, 10)
	org := s.as(tn.Org, tn.Organizer)
	form := func(vals map[string]string) raw {
		q := url.Values{}
		for k, x := range vals {
			q.Set(k, x)
		}
		return raw{contentType: "application/x-www-form-urlencoded", body: []byte(q.Encode())}
	}
	good := map[string]string{"chart_id": v.ChartID.String(), "name": "Form show", "venue": "Hall", "time_zone": "Asia/Tokyo",
		"starts_at": "2030-05-01T19:30", "on_sale_at": "2030-04-01T10:00", "sales_end_at": "2030-05-01T18:00",
		"price_front": "5000", "currency_front": "JPY", "price_back": "3000", "currency_back": "JPY"}
	bad := map[string]string{}
	for k, x := range good {
		bad[k] = x
	}
	bad["time_zone"], bad["price_back"], bad["sales_end_at"], bad["hold_ttl"] = "Tokyo", "", "2030-03-01T10:00", "soon"
	r := org.do("POST", "/admin/events", form(bad)).want(t, http.StatusUnprocessableEntity)
	page := string(r.body)
	for _, want := range []string{"must be a whole number", `id="hold_ttl-error"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the refused form lacks %q", want)
		}
	}
	bad["hold_ttl"] = ""
	page = string(org.do("POST", "/admin/events", form(bad)).want(t, http.StatusUnprocessableEntity).body)
	for _, want := range []string{`id="time_zone-error"`, `id="sales_end_at-error"`, `needs a price`} {
		if !strings.Contains(page, want) {
			t.Errorf("the refused form lacks %q", want)
		}
	}
	if n := orgRows(t, a, "events", tn.Org.ID); n != 0 {
		t.Fatalf("%d events written by refused forms", n)
	}
	r = org.do("POST", "/admin/events", form(good)).want(t, http.StatusSeeOther)
	id := strings.TrimSuffix(strings.TrimPrefix(r.header.Get("Location"), "/admin/events/"), "/edit")
	e, err := a.Store.Events.Event(context.Background(), tn.Org.ID, uuid.MustParse(id))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2030, 5, 1, 10, 30, 0, 0, time.UTC); !e.StartsAt.Equal(want) || e.Status != "draft" {
		t.Errorf("starts %v (want 19:30 Tokyo = %v), status %s", e.StartsAt, want, e.Status)
	}
	edit := string(org.do("GET", "/admin/events/"+id+"/edit", nil).want(t, http.StatusOK).body)
	if !strings.Contains(edit, `value="2030-05-01T19:30"`) {
		t.Error("the edit form does not show the start in venue time")
	}
	org.do("POST", "/admin/events/"+id+"/status", form(map[string]string{"status": "on_sale"})).want(t, http.StatusSeeOther)
	if e, _ := a.Store.Events.Event(context.Background(), tn.Org.ID, e.ID); e.Status != "on_sale" {
		t.Errorf("status after publish %s", e.Status)
	}
	s.as(tn.Org, tn.Buyers[0]).do("GET", "/admin/events", nil).want(t, http.StatusForbidden)
	s.as(other.Org, other.Organizer).do("GET", "/admin/events/"+id+"/edit", nil).want(t, http.StatusNotFound)
	s.as(other.Org, other.Organizer).do("POST", "/admin/events/"+id+"/status", form(map[string]string{"status": "closed"})).
		want(t, http.StatusNotFound)
}

// TestCartSaysCheckoutTime: the cart tells the time a checkout adds, the
// default's or the event's own (set through the API); the edit form shows
// the event's own.
func TestCartSaysCheckoutTime(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := gaChartEvent(t, s.app, tn)
	cart := func() string {
		return string(s.as(tn.Org, tn.Buyers[0]).do("GET", "/e/"+ev.String()+"/cart", nil).want(t, http.StatusOK).body)
	}
	if c := cart(); !strings.Contains(c, "Checkout gives you 5 more minutes to pay.") {
		t.Fatalf("cart with the default extension: %s", c)
	}
	s.as(tn.Org, tn.Organizer).do("PATCH", "/api/v1/events/"+ev.String(), map[string]any{"hold_extension": 90}).want(t, http.StatusOK)
	if c := cart(); !strings.Contains(c, "Checkout gives you 90 more seconds to pay.") {
		t.Fatalf("cart with the event's 90 s: %s", c)
	}
	form := string(s.as(tn.Org, tn.Organizer).do("GET", "/admin/events/"+ev.String()+"/edit", nil).want(t, http.StatusOK).body)
	if !regexp.MustCompile(`name="hold_extension"[^>]*value="90"`).MatchString(form) {
		t.Fatalf("edit form does not show the event's extension: %s", form)
	}
}
