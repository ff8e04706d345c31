package web

import (
	"bytes"
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/web/api"
)

// TestBoxOfficeAPI: a customer hold, a sale (201, replay 200, key reused
// 422), reading and cancelling the booking, and the refusals: held_until
// over 14 days, bad payment, another org's booking (404), with nothing
// written by a refused request.
func TestBoxOfficeAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	other := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	e := ev.ID.String()
	box := s.as(tn.Org, tn.BoxOffice)
	holds := "/api/v1/events/" + e + "/holds"
	cust := map[string]string{"name": "Ada Lovelace", "email": "Ada@Example.com", "note": "aisle"}

	before := orgState(t, a, tn.Org.ID)
	box.do("POST", holds, map[string]any{"seat_ids": []string{seats[0].String()}, "customer": cust,
		"held_until": time.Now().Add(15 * 24 * time.Hour)}).wantErr(t, 422, "invalid")
	box.do("POST", holds, map[string]any{"seat_ids": []string{seats[0].String()}, "customer": cust}).wantErr(t, 422, "invalid")
	box.do("POST", holds, map[string]any{"seat_ids": []string{seats[0].String()}}).wantErr(t, 403, "forbidden")
	box.do("POST", holds, map[string]any{"seat_ids": []string{seats[0].String()}, "customer": map[string]string{"name": "X", "email": "nope"},
		"held_until": time.Now().Add(time.Hour)}).wantErr(t, 422, "invalid")
	s.as(tn.Org, tn.Buyers[0]).do("POST", holds, map[string]any{"seat_ids": []string{seats[0].String()}, "customer": cust,
		"held_until": time.Now().Add(time.Hour)}).wantErr(t, 403, "forbidden")
	s.as(tn.Org, tn.Buyers[0]).do("POST", holds, map[string]any{"seat_ids": []string{seats[0].String()},
		"held_until": time.Now().Add(time.Hour)}).wantErr(t, 422, "invalid")
	if after := orgState(t, a, tn.Org.ID); after != before {
		t.Fatalf("refused requests wrote: %s -> %s", before, after)
	}

	until := time.Now().Add(7 * 24 * time.Hour).UTC().Truncate(time.Second)
	var hs struct {
		Holds []api.HoldJSON `json:"holds"`
	}
	box.do("POST", holds, map[string]any{"seat_ids": []string{seats[0].String(), seats[1].String()}, "customer": cust,
		"held_until": until}).want(t, 201).json(t, &hs)
	if len(hs.Holds) != 2 || !hs.Holds[0].HeldUntil.Equal(until) || hs.Holds[0].Customer == nil || hs.Holds[0].Customer.Email != "ada@example.com" {
		t.Fatalf("holds %+v", hs.Holds)
	}
	var list struct {
		Holds []api.HoldJSON `json:"holds"`
	}
	box.do("GET", holds, nil).want(t, 200).json(t, &list)
	if len(list.Holds) != 2 || list.Holds[0].Customer == nil || list.Holds[0].Customer.Note != "aisle" || list.Holds[0].UserID == nil {
		t.Fatalf("staff hold list %+v", list.Holds)
	}
	ids := []string{hs.Holds[0].ID.String(), hs.Holds[1].ID.String()}
	sales := "/api/v1/events/" + e + "/sales"
	box.do("POST", sales, map[string]any{"hold_ids": ids, "payment_method": "cheque"}, "Idempotency-Key", "k1").wantErr(t, 422, "invalid")
	box.do("POST", sales, map[string]any{"hold_ids": ids, "payment_method": "cash"}).wantErr(t, 422, "invalid")
	var b api.BookingJSON
	box.do("POST", sales, map[string]any{"hold_ids": ids, "payment_method": "cash"}, "Idempotency-Key", "k1").want(t, 201).json(t, &b)
	if b.Status != "confirmed" || b.Channel != "box_office" || b.PaymentMethod != "cash" || len(b.Tickets) != 2 ||
		len(b.Reference) != 9 || b.Customer == nil || b.Customer.Name != "Ada Lovelace" {
		t.Fatalf("booking %+v", b)
	}
	var again api.BookingJSON
	box.do("POST", sales, map[string]any{"hold_ids": ids, "payment_method": "cash"}, "Idempotency-Key", "k1").want(t, 200).json(t, &again)
	if again.ID != b.ID {
		t.Fatalf("replay answered booking %s, want %s", again.ID, b.ID)
	}
	box.do("POST", sales, map[string]any{"hold_ids": ids, "payment_method": "card"}, "Idempotency-Key", "k1").wantErr(t, 422, "idempotency_mismatch")

	// The bookings export names the customer, not the staff member, as
	// the buyer, and says who sold it.
	csvRows, err := csv.NewReader(bytes.NewReader(s.as(tn.Org, tn.Organizer).do("GET", "/api/v1/events/"+e+"/exports/bookings.csv", nil).
		want(t, 200).body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(csvRows) != 3 {
		t.Fatalf("bookings.csv has %d rows, want a header and 2 tickets", len(csvRows))
	}
	col := map[string]int{}
	for i, name := range csvRows[0] {
		col[name] = i
	}
	for _, r := range csvRows[1:] {
		if r[col["buyer_email"]] != "ada@example.com" || r[col["buyer_name"]] != "Ada Lovelace" || r[col["channel"]] != "box_office" ||
			r[col["sold_by"]] != tn.BoxOffice.Email || r[col["reference"]] != b.Reference {
			t.Errorf("bookings.csv row %v: want the customer as buyer, sold by %s, reference %s", r, tn.BoxOffice.Email, b.Reference)
		}
	}

	path := "/api/v1/bookings/" + b.ID.String()
	s.as(other.Org, other.BoxOffice).do("GET", path, nil).wantErr(t, 404, "not_found")
	s.as(other.Org, other.BoxOffice).do("POST", path+"/cancel", map[string]string{"reason": "x"}).wantErr(t, 404, "not_found")
	box.do("GET", "/api/v1/bookings/not-a-uuid", nil).wantErr(t, 404, "not_found")
	box.do("POST", path+"/cancel", map[string]any{}).wantErr(t, 422, "invalid")
	box.do("POST", path+"/cancel", map[string]any{"reason": "x", "ticket_ids": []string{uuid.NewString()}}).wantErr(t, 404, "not_found")

	var c api.BookingJSON
	box.do("POST", path+"/cancel", map[string]any{"reason": "customer ill", "ticket_ids": []string{b.Tickets[0].ID.String()}}).
		want(t, 200).json(t, &c)
	if c.Status != "partially_cancelled" || c.Tickets[0].Status != "cancelled" && c.Tickets[1].Status != "cancelled" {
		t.Fatalf("after partial cancel: %+v", c)
	}
	box.do("POST", path+"/cancel", map[string]any{"reason": "all of it"}).want(t, 200).json(t, &c)
	if c.Status != "cancelled" || c.CancelReason != "all of it" {
		t.Fatalf("after cancel: %+v", c)
	}
	box.do("POST", path+"/cancel", map[string]any{"reason": "again"}).wantErr(t, http.StatusConflict, "conflict")
	var got api.BookingJSON
	box.do("GET", path, nil).want(t, 200).json(t, &got)
	if got.Status != "cancelled" || got.Tickets[0].Status != "cancelled" || got.Tickets[1].Status != "cancelled" {
		t.Fatalf("read back: %+v", got)
	}
}

// TestBuyerSeesCancel: staff cancel a buyer's online booking (one ticket,
// then the rest); the buyer's booking page and API say so, and the buyer
// cannot cancel it themselves.
func TestBuyerSeesCancel(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	u := tn.Buyers[0]
	hs := coreHold(t, a, u, ev.ID, seats[0], seats[1])
	b, err := a.Holds.Purchase(t.Context(), actor(u), ev.ID, "k", []uuid.UUID{hs[0].ID, hs[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	buyer := s.as(tn.Org, u)
	page := "/bookings/" + b.ID.String()
	if r := buyer.do("GET", page, nil).want(t, 200); !strings.Contains(string(r.body), "Booking confirmed") {
		t.Fatalf("page before: %s", r.body)
	}
	buyer.do("POST", "/api/v1/bookings/"+b.ID.String()+"/cancel", map[string]string{"reason": "mine"}).wantErr(t, 403, "forbidden")
	box := s.as(tn.Org, tn.BoxOffice)
	box.do("POST", "/api/v1/bookings/"+b.ID.String()+"/cancel", map[string]any{"reason": "seat broken",
		"ticket_ids": []string{b.Tickets[0].ID.String()}}).want(t, 200)
	r := buyer.do("GET", page, nil).want(t, 200)
	for _, want := range []string{"Booking partly cancelled", "The box office cancelled some tickets of this booking: seat broken",
		`data-cancelled="true"`, `data-by="staff"`} {
		if !strings.Contains(string(r.body), want) {
			t.Fatalf("page after a partial cancel lacks %q: %s", want, r.body)
		}
	}
	box.do("POST", "/api/v1/bookings/"+b.ID.String()+"/cancel", map[string]any{"reason": "show cancelled"}).want(t, 200)
	var got api.BookingJSON
	buyer.do("GET", "/api/v1/bookings/"+b.ID.String(), nil).want(t, 200).json(t, &got)
	if got.Status != "cancelled" || got.Channel != "web" || got.CancelReason != "show cancelled" {
		t.Fatalf("buyer reads %+v", got)
	}
	if r := buyer.do("GET", page, nil).want(t, 200); !strings.Contains(string(r.body), "Booking cancelled") {
		t.Fatalf("page after cancel: %s", r.body)
	}
}

// TestCustomerBestAPI: staff ask the hold route for the best seats for a
// named customer (best_available with customer and held_until): the seats
// are side by side, the holds carry the customer and the time staff chose
// (in the answer and in the staff hold list). Refused: a buyer naming a
// customer (403), staff without one (403), a bad count or a missing
// held_until (422 naming the field), seats named as well (422), another
// organization's event (404), each with nothing written.
func TestCustomerBestAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	other := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 6)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID) // row 1: 0–5, row 2: 6–11
	holds := "/api/v1/events/" + ev.ID.String() + "/holds"
	box := s.as(tn.Org, tn.BoxOffice)
	cust := map[string]string{"name": "Ada Lovelace", "email": "ada@example.com"}
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	best := func(n any) map[string]any { return map[string]any{"count": n} }

	before := orgState(t, a, tn.Org.ID)
	s.as(tn.Org, tn.Buyers[0]).do("POST", holds, map[string]any{"best_available": best(3), "customer": cust, "held_until": until}).
		wantErr(t, 403, "forbidden")
	box.do("POST", holds, map[string]any{"best_available": best(3)}).wantErr(t, 403, "forbidden")
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"count 0", map[string]any{"best_available": best(0), "customer": cust, "held_until": until}, "best_available.count"},
		{"count 101", map[string]any{"best_available": best(101), "customer": cust, "held_until": until}, "best_available.count"},
		{"count not a number", map[string]any{"best_available": best("three"), "customer": cust, "held_until": until}, "best_available.count"},
		{"no held_until", map[string]any{"best_available": best(3), "customer": cust}, "held_until"},
		{"held_until too far", map[string]any{"best_available": best(3), "customer": cust,
			"held_until": time.Now().Add(15 * 24 * time.Hour)}, "held_until"},
		{"bad email", map[string]any{"best_available": best(3), "customer": map[string]string{"name": "X", "email": "nope"},
			"held_until": until}, "customer.email"},
		{"seats named too", map[string]any{"best_available": best(3), "customer": cust, "held_until": until,
			"seat_ids": []string{seats[0].String()}}, "best_available"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := box.do("POST", holds, c.body).wantErr(t, 422, "invalid")
			if _, ok := e.Fields[c.field]; !ok {
				t.Errorf("fields %v, want %s", e.Fields, c.field)
			}
		})
	}
	s.as(other.Org, other.BoxOffice).do("POST", holds, map[string]any{"best_available": best(3), "customer": cust, "held_until": until}).
		wantErr(t, 404, "not_found")
	if after := orgState(t, a, tn.Org.ID); after != before {
		t.Fatalf("refused requests wrote: %s -> %s", before, after)
	}

	var got struct {
		Holds []api.HoldJSON `json:"holds"`
	}
	box.do("POST", holds, map[string]any{"best_available": best(3), "customer": cust, "held_until": until}).
		want(t, 201).json(t, &got)
	// The front row's centre: 2–4 and 3–5 are as central; the first wins.
	want := map[uuid.UUID]bool{seats[1]: true, seats[2]: true, seats[3]: true}
	if len(got.Holds) != 3 {
		t.Fatalf("holds %+v, want 3", got.Holds)
	}
	for _, h := range got.Holds {
		if !want[h.SeatID] || h.Customer == nil || h.Customer.Name != "Ada Lovelace" || !h.HeldUntil.Equal(until) {
			t.Errorf("hold %+v, want one of front row 2–4 for Ada Lovelace until %v", h, until)
		}
	}
	var list struct {
		Holds []api.HoldJSON `json:"holds"`
	}
	box.do("GET", holds, nil).want(t, 200).json(t, &list)
	for _, h := range list.Holds {
		if h.Customer == nil || h.Customer.Email != "ada@example.com" || h.UserID == nil || *h.UserID != tn.BoxOffice.ID {
			t.Errorf("staff hold list: %+v", h)
		}
	}
	if len(list.Holds) != 3 {
		t.Fatalf("staff hold list has %d holds, want 3", len(list.Holds))
	}
	// The box office's table shows the customer.
	page := box.do("GET", "/box-office/events/"+ev.ID.String(), nil).want(t, 200)
	if n := strings.Count(string(page.body), "Ada Lovelace &lt;ada@example.com&gt;"); n != 3 {
		t.Errorf("box office page names the customer %d times, want 3", n)
	}
	// An organizer too; the seats left are asked for with a section.
	box = s.as(tn.Org, tn.Organizer)
	box.do("POST", holds, map[string]any{"best_available": map[string]any{"count": 2, "section": "Z"}, "customer": cust,
		"held_until": until}).wantErr(t, 422, "invalid")
	box.do("POST", holds, map[string]any{"best_available": best(10), "customer": cust, "held_until": until}).
		wantErr(t, 409, "not_enough_seats")
}

// TestBoxOfficeBestForm: the box office's "best seats" form holds for the
// customer it names; refusals (no count, too many, an unknown section, a
// bad email) come back as the page's message with nothing written; a
// buyer is refused (403) and another organization gets 404. The form sent
// twice holds once.
func TestBoxOfficeBestForm(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	other := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 6)
	base := "/box-office/events/" + ev.ID.String()
	box := s.as(tn.Org, tn.BoxOffice)
	post := func(c *client, v url.Values) response {
		return c.do("POST", base+"/customer-best", formBody(v))
	}
	fields := func(count, section, email string) url.Values {
		return url.Values{"name": {"Ada Lovelace"}, "email": {email}, "hours": {"24"}, "count": {count}, "section": {section}}
	}
	flash := func() string {
		return box.do("GET", base, nil).want(t, 200).doc(t).Find("main > p[role=status]").Text()
	}

	before := orgState(t, a, tn.Org.ID)
	for _, c := range []struct {
		name string
		v    url.Values
		want string
	}{
		{"no count", fields("", "", "ada@example.com"), "Say how many seats to choose."},
		{"too many", fields("11", "", "ada@example.com"), "ask for between 1 and 10 seats (best_available.count must be 1 to 10)"},
		{"unknown section", fields("2", "Z", "ada@example.com"), "this event has no such section (best_available.section is not a section of this event)"},
		{"bad email", fields("2", "", "nope"), "the customer needs a name and an email address (customer.email must be an email address)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			post(box, c.v).want(t, http.StatusSeeOther)
			if got := flash(); got != c.want {
				t.Errorf("flash %q, want %q", got, c.want)
			}
		})
	}
	post(s.as(tn.Org, tn.Buyers[0]), fields("2", "", "ada@example.com")).want(t, http.StatusForbidden)
	post(s.as(other.Org, other.Organizer), fields("2", "", "ada@example.com")).want(t, http.StatusNotFound)
	if after := orgState(t, a, tn.Org.ID); after != before {
		t.Fatalf("refused forms wrote: %s -> %s", before, after)
	}

	post(box, fields("2", "A", "ada@example.com")).want(t, http.StatusSeeOther)
	if got := flash(); !strings.HasPrefix(got, "Held A-A-3, A-A-4 for Ada Lovelace until ") {
		t.Errorf("flash %q", got)
	}
	if n := orgRows(t, a, "seat_holds", tn.Org.ID); n != 2 {
		t.Errorf("%d holds, want 2", n)
	}

	// The page's form carries a key of its own rendering: sent twice (a
	// double click), it holds once and says so both times.
	key, ok := box.do("GET", base, nil).want(t, 200).doc(t).Find(`form[action$="/customer-holds"] input[name=key]`).Attr("value")
	if !ok || !strings.HasPrefix(key, "bo-") {
		t.Fatalf("the customer hold form's key %q", key)
	}
	keyed := fields("2", "A", "ada@example.com")
	keyed.Set("key", key)
	var told []string
	for range 2 {
		post(box, keyed).want(t, http.StatusSeeOther)
		told = append(told, flash())
	}
	if n := orgRows(t, a, "seat_holds", tn.Org.ID); n != 4 {
		t.Fatalf("%d holds after one form sent twice, want 4", n)
	}
	if !strings.HasPrefix(told[0], "Held A-A-1, A-A-2 for Ada Lovelace") || told[1] != told[0] {
		t.Errorf("the form sent twice said %q", told)
	}
	keyed.Set("key", "two words")
	post(box, keyed).want(t, http.StatusSeeOther)
	if got := flash(); got != "The form sent a malformed request key; reload the page." {
		t.Errorf("a malformed key: flash %q", got)
	}
	if n := orgRows(t, a, "seat_holds", tn.Org.ID); n != 4 {
		t.Fatalf("%d holds after a malformed key, want 4", n)
	}
}

// TestBoxOfficeBestFormAccessible: the box office's best seats keep the
// seats held back for accessible seating unless the form says the
// customer needs them, as for a buyer.
func TestBoxOfficeBestFormAccessible(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 6)
	ctx := context.Background()
	// The row's centre, 3 and 4, is held back for an hour; set before the
	// event's first request loads it.
	if _, err := a.Pool.Exec(ctx, `UPDATE seats SET accessible = true WHERE event_id = $1 AND number IN (3, 4)`, ev.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `UPDATE events SET accessible_release_at = now() + interval '1 hour' WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	base := "/box-office/events/" + ev.ID.String()
	box := s.as(tn.Org, tn.BoxOffice)
	best := func(accessible bool) string {
		v := url.Values{"name": {"Ada Lovelace"}, "email": {"ada@example.com"}, "hours": {"24"}, "count": {"2"}}
		if accessible {
			v.Set("accessible", "on")
		}
		box.do("POST", base+"/customer-best", formBody(v)).want(t, http.StatusSeeOther)
		return box.do("GET", base, nil).want(t, 200).doc(t).Find("main > p[role=status]").Text()
	}
	if got := best(false); strings.Contains(got, "A-A-3") || strings.Contains(got, "A-A-4") || !strings.HasPrefix(got, "Held A-A-") {
		t.Errorf("best 2 without accessible seating: %q, want two seats other than 3 and 4", got)
	}
	if got := best(true); !strings.HasPrefix(got, "Held A-A-3, A-A-4 for Ada Lovelace") {
		t.Errorf("best 2 for a customer needing accessible seating: %q, want A-A-3, A-A-4", got)
	}
}

// TestFindBookingsAPI: staff find bookings by reference (as typed: any
// case, with or without the dash) or by email (the box-office customer's,
// the buying account's); another organization finds nothing of them; a
// buyer is refused; a query that is neither, both or malformed is 422
// naming the field.
func TestFindBookingsAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	other := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	sold := sale(t, a, tn.BoxOffice, ev.ID, seats[0], seats[1])
	hs := coreHold(t, a, tn.Buyers[0], ev.ID, seats[5])
	online, err := a.Holds.Purchase(t.Context(), actor(tn.Buyers[0]), ev.ID, "k", []uuid.UUID{hs[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	type found struct {
		Bookings []api.BookingJSON `json:"bookings"`
	}
	find := func(c *client, q url.Values) found {
		t.Helper()
		var f found
		c.do("GET", "/api/v1/bookings?"+q.Encode(), nil).want(t, 200).json(t, &f)
		return f
	}
	ids := func(f found) []uuid.UUID {
		var out []uuid.UUID
		for _, b := range f.Bookings {
			out = append(out, b.ID)
		}
		return out
	}
	ref := sold.Reference // stored form, XXXXXXXX
	for _, c := range []struct {
		name string
		q    url.Values
		want []uuid.UUID
	}{
		{"reference as printed", url.Values{"reference": {store.FormatReference(ref)}}, []uuid.UUID{sold.ID}},
		{"reference typed", url.Values{"reference": {" " + strings.ToLower(ref) + " "}}, []uuid.UUID{sold.ID}},
		{"customer email", url.Values{"email": {"ADA@example.com"}}, []uuid.UUID{sold.ID}},
		{"buyer email", url.Values{"email": {tn.Buyers[0].Email}}, []uuid.UUID{online.ID}},
		{"unknown reference", url.Values{"reference": {"ZZZZ-ZZZZ"}}, nil},
		{"unknown email", url.Values{"email": {"nobody@example.com"}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, staff := range []store.User{tn.BoxOffice, tn.Organizer} {
				if got := ids(find(s.as(tn.Org, staff), c.q)); !slices.Equal(got, c.want) {
					t.Errorf("%s found %v, want %v", staff.Role, got, c.want)
				}
			}
			if got := find(s.as(other.Org, other.BoxOffice), c.q); len(got.Bookings) != 0 {
				t.Errorf("another organization found %v", ids(got))
			}
		})
	}
	got := find(s.as(tn.Org, tn.BoxOffice), url.Values{"reference": {ref}})
	if b := got.Bookings[0]; b.Customer == nil || b.Customer.Name != "Ada Lovelace" || len(b.Tickets) != 2 || b.Channel != "box_office" {
		t.Errorf("booking found: %+v", b)
	}

	s.as(tn.Org, tn.Buyers[0]).do("GET", "/api/v1/bookings?email="+url.QueryEscape(tn.Buyers[0].Email), nil).wantErr(t, 403, "forbidden")
	s.client().do("GET", "/api/v1/bookings?reference="+ref, nil).want(t, 401)
	box := s.as(tn.Org, tn.BoxOffice)
	for _, c := range []struct {
		q, field string
	}{
		{"", "reference"},
		{"reference=" + ref + "&email=ada%40example.com", "reference"},
		{"reference=ABCD-1234", "reference"}, // 1 is not in the alphabet
		{"reference=" + strings.Repeat("A", 300), "reference"},
		{"email=ada", "email"},
		{"email=" + strings.Repeat("a", 250) + "%40example.com", "email"},
	} {
		e := box.do("GET", "/api/v1/bookings?"+c.q, nil).wantErr(t, 422, "invalid")
		if _, ok := e.Fields[c.field]; !ok {
			t.Errorf("%q: fields %v, want %s", c.q, e.Fields, c.field)
		}
	}
}

// TestConfirmationPrices: the printable confirmation shows each ticket's
// price as sold and the total with its currency, none of it hidden from
// print; a later price change does not alter it; a cancelled ticket
// leaves the total; a complimentary sale says the total is face value.
func TestConfirmationPrices(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 0)
	ev := gaChartEvent(t, a, tn) // row A front at 40.00 EUR, row B back at 15.00 EUR
	all, err := a.Store.Events.Seats(t.Context(), tn.Org.ID, ev)
	if err != nil {
		t.Fatal(err)
	}
	seat := func(row string, n int) uuid.UUID {
		for _, st := range all {
			if st.Row == row && st.Number == n {
				return st.ID
			}
		}
		t.Fatalf("no seat %s %d", row, n)
		return uuid.Nil
	}
	b := sale(t, a, tn.BoxOffice, ev, seat("A", 5), seat("A", 6), seat("B", 5))
	org := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	if _, err := a.Events.Update(t.Context(), org, ev, hold.EventInput{
		Prices: []store.Price{{Category: "front", PriceMinor: 9900, Currency: "EUR"}, {Category: "back", PriceMinor: 100, Currency: "EUR"}}}); err != nil {
		t.Fatal(err)
	}
	box := s.as(tn.Org, tn.BoxOffice)
	page := "/box-office/bookings/" + b.ID.String()
	check := func(wantPrices []string, total string) {
		t.Helper()
		d := box.do("GET", page, nil).want(t, 200).doc(t)
		var prices []string
		d.Find(`[data-testid=ticket-price]`).Each(func(_ int, c *goquery.Selection) { prices = append(prices, c.Text()) })
		if !slices.Equal(prices, wantPrices) {
			t.Errorf("ticket prices %q, want %q", prices, wantPrices)
		}
		if got := d.Find(`[data-testid=total]`).Text(); got != total {
			t.Errorf("total %q, want %q", got, total)
		}
		// Printed, the prices and the total stay: no cell of theirs, nor
		// anything around them, is hidden from print.
		for _, sel := range []string{`[data-testid=ticket-price]`, `[data-testid=total]`, `tfoot th`} {
			d.Find(sel).Each(func(_ int, c *goquery.Selection) {
				if c.Is(`[class*="print:hidden"]`) || c.ParentsFiltered(`[class*="print:hidden"]`).Length() > 0 {
					t.Errorf("%s is hidden from print", sel)
				}
			})
		}
	}
	check([]string{"40.00 EUR", "40.00 EUR", "15.00 EUR"}, "95.00 EUR")

	i := slices.IndexFunc(b.Tickets, func(x store.Ticket) bool { return x.SeatID == seat("A", 5) })
	box.do("POST", "/api/v1/bookings/"+b.ID.String()+"/cancel", map[string]any{"reason": "one less",
		"ticket_ids": []string{b.Tickets[i].ID.String()}}).want(t, 200)
	check([]string{"40.00 EUR", "40.00 EUR", "15.00 EUR"}, "55.00 EUR")
	d := box.do("GET", page, nil).want(t, 200).doc(t)
	if d.Find(`tr[data-ticket="S-A-5"] [data-testid=ticket-price].line-through`).Length() != 1 {
		t.Errorf("the cancelled ticket's price is not struck through: %s", d.Find(`tbody`).Text())
	}

	hs := customerHold(t, a, tn.BoxOffice, ev, seat("B", 8))
	comp, err := a.BoxOffice.Sell(t.Context(), actor(tn.BoxOffice), ev, "comp-1", []uuid.UUID{hs[0].ID}, "comp")
	if err != nil {
		t.Fatal(err)
	}
	d = box.do("GET", "/box-office/bookings/"+comp.ID.String(), nil).want(t, 200).doc(t)
	if got := d.Find(`[data-testid=total]`).Text(); got != "1.00 EUR" || !strings.Contains(d.Find(`tfoot th`).Text(), "complimentary") {
		t.Errorf("comp sale: total %q, %q", got, d.Find(`tfoot th`).Text())
	}
}
