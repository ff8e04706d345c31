package web

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// gaChartEvent is an on-sale event from a fresh chart whose GA section G
// has 100 places.
func gaChartEvent(t *testing.T, a *app.App, tn testenv.Tenant) uuid.UUID {
	t.Helper()
	ev := gaDraftEvent(t, a, tn)
	publishEvent(t, a, tn, ev)
	return ev
}

// gaDraftEvent makes the event of gaChartEvent, still a draft: nothing has
// loaded it yet (publishing warms it into the cache).
func gaDraftEvent(t *testing.T, a *app.App, tn testenv.Tenant) uuid.UUID {
	t.Helper()
	v := testenv.NewChart(t, a, tn.Org.ID, 2, 10)
	now := time.Now().UTC()
	s := func(x string) *string { return &x }
	org := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	e, err := a.Events.Create(context.Background(), org, hold.EventInput{Name: s("Standing show"), Venue: s("Hall"),
		StartsAt: s(now.Add(48 * time.Hour).Format(time.RFC3339)), TimeZone: s("UTC"),
		OnSaleAt: s(now.Add(-time.Hour).Format(time.RFC3339)), SalesEndAt: s(now.Add(24 * time.Hour).Format(time.RFC3339)), ChartID: s(v.ChartID.String()),
		Prices: []store.Price{{Category: "front", PriceMinor: 4000, Currency: "EUR"}, {Category: "back", PriceMinor: 1500, Currency: "EUR"}}})
	if err != nil {
		t.Fatal(err)
	}
	return e.ID
}

// publishEvent puts an event on sale.
func publishEvent(t *testing.T, a *app.App, tn testenv.Tenant, ev uuid.UUID) {
	t.Helper()
	onSale := "on_sale"
	org := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	if _, err := a.Events.Update(context.Background(), org, ev, hold.EventInput{Status: &onSale}); err != nil {
		t.Fatal(err)
	}
}

// TestGAHoldAPI: {"ga": {section, count}} answers 201 with one hold per
// place; every malformed body is 422 naming its field with nothing
// written; fewer places left than asked is 409 sold_out; another tenant's
// event is 404.
func TestGAHoldAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn, other := testenv.NewTenant(t, a, 1), testenv.NewTenant(t, a, 1)
	ev := gaDraftEvent(t, a, tn)
	// Only 3 places are left: the rest are blocked behind the feed's back,
	// so before anything loads the event (publishing does).
	if _, err := a.Pool.Exec(context.Background(), `UPDATE seats SET status = 'blocked' FROM sections c
		WHERE c.id = seats.section_id AND c.kind = 'ga' AND seats.event_id = $1 AND seats.number > 3`, ev); err != nil {
		t.Fatal(err)
	}
	publishEvent(t, a, tn, ev)
	b := s.as(tn.Org, tn.Buyers[0])
	path := "/api/v1/events/" + ev.String() + "/holds"

	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"count zero", map[string]any{"ga": map[string]any{"section": "G", "count": 0}}, "ga.count"},
		{"count too big", map[string]any{"ga": map[string]any{"section": "G", "count": 101}}, "ga.count"},
		{"count as text", map[string]any{"ga": map[string]any{"section": "G", "count": "2"}}, "ga.count"},
		{"no section", map[string]any{"ga": map[string]any{"count": 1}}, "ga.section"},
		{"unknown field", map[string]any{"ga": map[string]any{"section": "G", "count": 1, "price": 0}}, "price"},
		{"ga and seats", map[string]any{"ga": map[string]any{"section": "G", "count": 1}, "seat_id": uuid.NewString()}, "ga"},
	} {
		e := b.do("POST", path, tc.body).wantErr(t, http.StatusUnprocessableEntity, "invalid")
		if _, ok := e.Fields[tc.field]; !ok {
			t.Errorf("%s: fields %v, want %s", tc.name, e.Fields, tc.field)
		}
	}
	if n := orgRows(t, a, "seat_holds", tn.Org.ID); n != 0 {
		t.Fatalf("malformed requests wrote %d holds", n)
	}

	var got struct {
		Holds []struct {
			ID     uuid.UUID `json:"id"`
			SeatID uuid.UUID `json:"seat_id"`
		} `json:"holds"`
	}
	b.do("POST", path, map[string]any{"ga": map[string]any{"section": "G", "count": 2}}).want(t, http.StatusCreated).json(t, &got)
	if len(got.Holds) != 2 || got.Holds[0].SeatID == got.Holds[1].SeatID {
		t.Fatalf("holds %+v, want 2 places", got.Holds)
	}
	e := b.do("POST", path, map[string]any{"ga": map[string]any{"section": "G", "count": 2}}).wantErr(t, http.StatusConflict, "sold_out")
	if e.Message != "section G has only 1 places left" {
		t.Logf("sold_out message: %q", e.Message)
	}
	b.do("POST", path, map[string]any{"ga": map[string]any{"section": "S", "count": 1}}).wantErr(t, http.StatusNotFound, "not_found")
	s.as(other.Org, other.Buyers[0]).do("POST", path, map[string]any{"ga": map[string]any{"section": "G", "count": 1}}).
		wantErr(t, http.StatusNotFound, "not_found")
	if n := orgRows(t, a, "seat_holds", tn.Org.ID); n != 2 {
		t.Fatalf("%d holds written, want 2", n)
	}
	if n := orgRows(t, a, "seat_holds", other.Org.ID); n != 0 {
		t.Fatalf("the other tenant has %d holds", n)
	}
}

// TestGALive: a buyer's map shows a GA section's places left, without the
// places drawn as seats; when another buyer holds 3 places (through the
// map's form), the first map's socket gets the new count, and the holder's
// cart lines, in the answer and on the holder's own socket, name each
// place by section and number ("G place 7") with its category's price; a
// seat the holder then holds through the API arrives in the cart live
// with its label and price too.
func TestGALive(t *testing.T) {
	s := newTestServer(t, nil)
	testenv.Background(t, s.app)
	tn := testenv.NewTenant(t, s.app, 2)
	ev := gaChartEvent(t, s.app, tn)
	x, y := s.as(tn.Org, tn.Buyers[0]), s.as(tn.Org, tn.Buyers[1])
	page := string(x.do("GET", "/e/"+ev.String(), nil).want(t, http.StatusOK).body)
	if !strings.Contains(page, `data-testid="ga-panel"`) || !regexp.MustCompile(`data-testid="ga-left"[^>]*>100<`).MatchString(page) {
		t.Fatal("the map has no GA panel with 100 places left")
	}
	if n := strings.Count(page, `id="seat-`); n != 20 {
		t.Fatalf("%d seats drawn, want the 20 seats and no GA place", n)
	}
	conn, _, err := s.dialAs(t, x, ev)
	if err != nil {
		t.Fatal(err)
	}
	own, _, err := s.dialAs(t, y, ev)
	if err != nil {
		t.Fatal(err)
	}
	cart := string(y.do("POST", "/e/"+ev.String()+"/ga/G", raw{"application/x-www-form-urlencoded", []byte("count=3")}, "HX-Request", "true").
		want(t, http.StatusOK).body)
	line := regexp.MustCompile(`>G place \d+<`)
	if n := len(line.FindAllString(cart, -1)); n != 3 || strings.Count(cart, "15.00 EUR") < 3 || strings.Contains(cart, "G-GA-") {
		t.Fatalf("the holder's cart names %d places as \"G place n\", want 3, each at 15.00 EUR: %s", n, cart)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	left := regexp.MustCompile(`id="ga-left-[0-9a-f-]+"[^>]*>(\d+)<`)
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("no frame with 97 places left: %v", err)
		}
		if m := left.FindAllStringSubmatch(string(msg), -1); len(m) > 0 && m[len(m)-1][1] == "97" {
			break
		}
	}
	_ = own.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, msg, err := own.ReadMessage()
		if err != nil {
			t.Fatalf("no cart line for a place on the holder's socket: %v", err)
		}
		if f := string(msg); strings.Contains(f, `id="cart-`) {
			if !line.MatchString(f) || !strings.Contains(f, "15.00 EUR") {
				t.Fatalf("the live cart line: %s", f)
			}
			break
		}
	}
	// A seat held elsewhere (the API, another tab) arrives in the cart
	// with its label and its category's price too.
	seat, err := s.app.Store.Audit.SeatByLabel(context.Background(), tn.Org.ID, ev, "S-A-5")
	if err != nil {
		t.Fatal(err)
	}
	y.do("POST", "/api/v1/events/"+ev.String()+"/holds", map[string]any{"seat_ids": []string{seat.String()}}).want(t, http.StatusCreated)
	for {
		_, msg, err := own.ReadMessage()
		if err != nil {
			t.Fatalf("no cart line for the seat on the holder's socket: %v", err)
		}
		if f := string(msg); strings.Contains(f, `id="cart-`+seat.String()+`"`) {
			if !strings.Contains(f, ">S-A-5<") || !strings.Contains(f, "40.00 EUR") {
				t.Fatalf("the live cart line of seat S-A-5: %s", f)
			}
			return
		}
	}
}

// TestGAHoldIdempotencyKey: a GA hold repeated with its Idempotency-Key
// answers 200 with the first request's holds and holds nothing more; the
// key with another request is 422 idempotency_mismatch, a malformed key
// 422 naming the header, each with nothing written. The map's form keys
// its request the same way.
func TestGAHoldIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	ev := gaChartEvent(t, a, tn)
	b := s.as(tn.Org, tn.Buyers[0])
	path := "/api/v1/events/" + ev.String() + "/holds"
	body := map[string]any{"ga": map[string]any{"section": "G", "count": 2}}
	type holds struct {
		Holds []struct {
			ID uuid.UUID `json:"id"`
		} `json:"holds"`
	}
	var first, again holds
	b.do("POST", path, body, "Idempotency-Key", "ga-1").want(t, http.StatusCreated).json(t, &first)
	b.do("POST", path, body, "Idempotency-Key", "ga-1").want(t, http.StatusOK).json(t, &again)
	if len(first.Holds) != 2 || len(again.Holds) != 2 || first.Holds[0].ID != again.Holds[0].ID || first.Holds[1].ID != again.Holds[1].ID {
		t.Fatalf("first %+v, repeat %+v: want the same two holds", first, again)
	}
	b.do("POST", path, map[string]any{"ga": map[string]any{"section": "G", "count": 1}}, "Idempotency-Key", "ga-1").
		wantErr(t, http.StatusUnprocessableEntity, "idempotency_mismatch")
	e := b.do("POST", path, body, "Idempotency-Key", strings.Repeat("k", 201)).wantErr(t, http.StatusUnprocessableEntity, "invalid")
	if _, ok := e.Fields["Idempotency-Key"]; !ok {
		t.Errorf("fields %v, want Idempotency-Key", e.Fields)
	}
	if n := orgRows(t, a, "seat_holds", tn.Org.ID); n != 2 {
		t.Fatalf("%d holds written, want 2", n)
	}
	// The map's form sends its request's key as a field: twice, once.
	form := raw{"application/x-www-form-urlencoded", []byte("count=3&key=form-1")}
	for range 2 {
		b.do("POST", "/e/"+ev.String()+"/ga/G", form, "HX-Request", "true").want(t, http.StatusOK)
	}
	if n := orgRows(t, a, "seat_holds", tn.Org.ID); n != 5 {
		t.Fatalf("%d holds after the form sent one request twice, want 5", n)
	}
}

// TestGADashboard: the organizer's occupancy panel marks a standing
// section's row and says how many of the event's seats are standing places;
// a hold of places counts in its row.
func TestGADashboard(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := gaChartEvent(t, s.app, tn)
	holdPlaces(t, s.as(tn.Org, tn.Buyers[0]), ev, 3)
	p := string(s.as(tn.Org, tn.Organizer).do("GET", "/admin/events/"+ev.String()+"/occupancy", nil).want(t, http.StatusOK).body)
	for _, re := range []string{
		`data-testid="count-places">100<`,
		`<tr data-section="G"[^>]*>\s*<th[^>]*>\s*G <span[^>]*>Standing</span> <span[^>]*data-testid="standing"`,
		`<tr data-section="G"(?s:.*?)data-count="held">3 `,
	} {
		if !regexp.MustCompile(re).MatchString(p) {
			t.Errorf("occupancy panel does not match %s:\n%s", re, p)
		}
	}
	if regexp.MustCompile(`<tr data-section="S"[^>]*>\s*<th[^>]*>[^<]*<span[^>]*>[^<]*</span>\s*<span[^>]*data-testid="standing"`).MatchString(p) {
		t.Errorf("the seated section is marked standing:\n%s", p)
	}
}

// TestGABookingNamesPlaces: a booking of standing places shows them on its
// page as people call them ("G place 7"), while the API keeps each one's
// canonical label (section-row-number), which lookups read back.
func TestGABookingNamesPlaces(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := gaChartEvent(t, s.app, tn)
	b := s.as(tn.Org, tn.Buyers[0])
	ids := holdPlaces(t, b, ev, 2)
	var booking struct {
		ID      string `json:"id"`
		Tickets []struct {
			Seat string `json:"seat"`
		} `json:"tickets"`
	}
	b.do("POST", "/api/v1/events/"+ev.String()+"/purchase", map[string]any{"hold_ids": ids}, "Idempotency-Key", "buy").
		want(t, http.StatusCreated).json(t, &booking)
	b.do("GET", "/api/v1/bookings/"+booking.ID, nil).want(t, http.StatusOK).json(t, &booking)
	canonical := regexp.MustCompile(`^G-GA-\d+$`)
	if len(booking.Tickets) != 2 || !canonical.MatchString(booking.Tickets[0].Seat) || !canonical.MatchString(booking.Tickets[1].Seat) {
		t.Fatalf("API tickets %+v, want 2 canonical place labels", booking.Tickets)
	}
	page := string(b.do("GET", "/bookings/"+booking.ID, nil).want(t, http.StatusOK).body)
	if n := len(regexp.MustCompile(`>G place \d+<`).FindAllString(page, -1)); n != 2 || strings.Contains(page, "G-GA-") {
		t.Fatalf("booking page names %d places as \"G place n\", want 2 and no canonical label:\n%s", n, page)
	}
}

// holdPlaces holds n places of gaChartEvent's standing section G for b
// through the API and returns their hold ids.
func holdPlaces(t *testing.T, b *client, ev uuid.UUID, n int) []string {
	t.Helper()
	var held struct {
		Holds []struct {
			ID string `json:"id"`
		} `json:"holds"`
	}
	b.do("POST", "/api/v1/events/"+ev.String()+"/holds", map[string]any{"ga": map[string]any{"section": "G", "count": n}},
		"Idempotency-Key", uuid.NewString()).want(t, http.StatusCreated).json(t, &held)
	ids := make([]string, len(held.Holds))
	for i, h := range held.Holds {
		ids[i] = h.ID
	}
	if len(ids) != n {
		t.Fatalf("%d places held, want %d", len(ids), n)
	}
	return ids
}
