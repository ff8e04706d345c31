package views

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

func render(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func asset(name string) string { return "/static/" + name }

func TestSeatButtonStates(t *testing.T) {
	cases := []struct {
		name     string
		seat     Seat
		label    string
		mine     bool
		disabled bool
	}{
		{"available", Seat{Status: "available"}, "Section B, row 4, seat 12, available", false, false},
		{"held by other", Seat{Status: "held"}, "Section B, row 4, seat 12, held", false, true},
		{"held by me", Seat{Status: "held", Mine: true}, "Section B, row 4, seat 12, held by you", true, false},
		{"sold", Seat{Status: "sold"}, "Section B, row 4, seat 12, sold", false, true},
		{"blocked", Seat{Status: "blocked"}, "Section B, row 4, seat 12, blocked", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.seat
			s.ID, s.EventID, s.Section, s.Row, s.Number, s.Col, s.GridRow, s.Version = "s1", "e1", "B", "4", 12, 7, 9, 42
			doc := render(t, SeatButton(s, false))
			b := doc.Find("button#seat-s1")
			if b.Length() != 1 {
				t.Fatal("no seat button")
			}
			if got, _ := b.Attr("data-status"); got != s.Status {
				t.Errorf("data-status %q", got)
			}
			if got, _ := b.Attr("data-version"); got != "42" {
				t.Errorf("data-version %q", got)
			}
			if got, _ := b.Attr("aria-label"); got != tc.label {
				t.Errorf("aria-label %q, want %q", got, tc.label)
			}
			_, mine := b.Attr("data-mine")
			if mine != tc.mine {
				t.Errorf("data-mine present=%v", mine)
			}
			_, disabled := b.Attr("aria-disabled")
			if disabled != tc.disabled {
				t.Errorf("aria-disabled present=%v", disabled)
			}
			if !b.HasClass("col-start-7") || !b.HasClass("row-start-9") {
				t.Errorf("grid position classes missing: %s", b.AttrOr("class", ""))
			}
			if _, oob := b.Attr("hx-swap-oob"); oob {
				t.Error("a page seat must not be out-of-band")
			}
		})
	}
}

func TestLiveSeatFrame(t *testing.T) {
	s := Seat{ID: "s1", EventID: "e1", Section: "A", Row: "C", Number: 3, Col: 4, GridRow: 5, Status: "held", Version: 7, Mine: true}
	until := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	doc := render(t, LiveSeat(s, &CartHold{HoldID: "h1", SeatID: "s1", Label: "A-C-3", HeldUntil: until}))
	if v, _ := doc.Find("#seat-s1").Attr("hx-swap-oob"); v != "true" {
		t.Errorf("seat not out-of-band: %q", v)
	}
	if doc.Find(`li#cart-s1[hx-swap-oob="delete"]`).Length() != 1 {
		t.Error("the old cart entry is not removed first")
	}
	add := doc.Find(`ul[hx-swap-oob="beforeend:#cart-items"] li#cart-s1 [data-until]`)
	if got, _ := add.Attr("data-until"); got != "2030-01-02T03:04:05Z" {
		t.Errorf("countdown data-until %q", got)
	}
	// A seat that is no longer held removes its cart entry and adds none.
	s.Status, s.Mine = "available", false
	doc = render(t, LiveSeat(s, nil))
	if doc.Find(`li#cart-s1[hx-swap-oob="delete"]`).Length() != 1 || doc.Find("ul").Length() != 0 {
		t.Error("freed seat: cart entry not just deleted")
	}
}

func TestCartPanel(t *testing.T) {
	until := time.Now().Add(10 * time.Minute).UTC()
	c := Cart{EventID: "e1", Holds: []CartHold{{HoldID: "h1", SeatID: "s1", Label: "B-4-12", HeldUntil: until}},
		Message: "Seat B-4-12 was just taken by someone else.", Kind: "error"}
	doc := render(t, CartPanel(c))
	if got := strings.TrimSpace(doc.Find("#cart [role=alert]").Text()); got != c.Message {
		t.Errorf("message %q", got)
	}
	if doc.Find(`#cart-s1 [data-until="`+until.Format(time.RFC3339)+`"]`).Length() != 1 {
		t.Error("no countdown for the hold")
	}
	if doc.Find(`button[hx-post="/e/e1/checkout"]`).Length() != 1 || doc.Find("form").Length() != 0 {
		t.Error("before checkout: want a Checkout button and no Pay form")
	}
	if _, hidden := doc.Find(`[data-cart-checkout]`).Attr("hidden"); hidden {
		t.Error("checkout hidden with a hold in the cart")
	}
	// A priced line carries its price in minor units for the page's live
	// total; an unpriced one none.
	if doc.Find(`#cart-s1[data-price-minor]`).Length() != 0 {
		t.Error("an unpriced line carries a price")
	}
	priced := c
	priced.Holds = []CartHold{{HoldID: "h2", SeatID: "s2", Label: "A-1-2", HeldUntil: until, Price: "0.450 KWD", PriceMinor: 450, Currency: "KWD", Scale: 3}}
	line := render(t, CartPanel(priced)).Find(`#cart-s2[data-hold="h2"]`)
	if m, _ := line.Attr("data-price-minor"); m != "450" {
		t.Errorf("data-price-minor %q", m)
	}
	if cur, _ := line.Attr("data-currency"); cur != "KWD" {
		t.Errorf("data-currency %q", cur)
	}
	if sc, _ := line.Attr("data-scale"); sc != "3" {
		t.Errorf("data-scale %q", sc)
	}
	// Empty, the cart keeps its checkout and total, hidden, for lines that
	// arrive live.
	empty := render(t, CartPanel(Cart{EventID: "e1"}))
	for _, sel := range []string{`[data-cart-checkout]`, `[data-cart-total]`} {
		if _, hidden := empty.Find(sel).Attr("hidden"); !hidden {
			t.Errorf("empty cart: %s not there hidden", sel)
		}
	}
	if _, hidden := empty.Find(`[data-cart-empty]`).Attr("hidden"); hidden {
		t.Error("empty cart: the note is hidden")
	}
	c.PayKey = "k1"
	doc = render(t, CartPanel(c))
	if v, _ := doc.Find(`form input[name=key]`).Attr("value"); v != "k1" {
		t.Errorf("pay key %q", v)
	}
	if v, _ := doc.Find(`form input[name=hold_id]`).Attr("value"); v != "h1" {
		t.Errorf("pay hold %q", v)
	}
}

func TestSeatMapPageWiring(t *testing.T) {
	m := SeatMap{EventID: "e1", EventName: "Gala", Seats: []Seat{{ID: "s1", EventID: "e1", Section: "A", Row: "A", Number: 1, Col: 3, GridRow: 3, Status: "available", Version: 1}}}
	doc := render(t, SeatMapPage(Page{Title: "Gala", Asset: asset, User: &User{Email: "b@x", Role: "buyer", OrgName: "Org"}}, m, Cart{EventID: "e1"}))
	if v, _ := doc.Find("[ws-connect]").Attr("ws-connect"); v != "/live/events/e1" {
		t.Errorf("ws-connect %q", v)
	}
	if doc.Find(`script:not([src])`).Length() != 0 {
		t.Error("inline script on the page (CSP forbids it)")
	}
	if doc.Find(`[style]`).Length() != 0 {
		t.Error("inline style attribute on the page (CSP forbids it)")
	}
	if doc.Find(`#venue[data-resync][hx-trigger=resync]`).Length() != 1 || doc.Find(`#cart[data-resync]`).Length() != 1 {
		t.Error("map and cart do not resync after a reconnect")
	}
	if got := doc.Find(`[data-testid=nav-user]`).Text(); !strings.Contains(got, "b@x") {
		t.Errorf("nav user %q", got)
	}
}
