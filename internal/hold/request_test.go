package hold_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestRequestShape: a hold request says which seats in exactly one way,
// for a customer only when staff ask, and with an idempotency key only
// when the core picks its seats; a request of another shape, or with a
// count out of bounds, is refused and leaves neither a hold nor a claimed
// key behind.
func TestRequestShape(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	e := onSale(t, a, tn, 1, nil)
	_, pos := seatMap(t, a, tn.Org.ID, e.ID)
	seats := []uuid.UUID{pos["A/01"]}
	until := time.Now().Add(time.Hour)
	b, box := buyer(tn.Buyers[0]), staff(tn.BoxOffice)
	for _, c := range []struct {
		name string
		who  hold.Actor
		req  hold.Request
		want apperr.Code
	}{
		{"no seats", b, hold.Request{}, apperr.Invalid},
		{"best and ga", b, hold.Request{Best: &hold.Best{Count: 1}, GA: &hold.GA{Section: "S", Count: 1}}, apperr.Invalid},
		{"seats and best", b, hold.Request{Seats: seats, Best: &hold.Best{Count: 1}}, apperr.Invalid},
		{"seats and ga", b, hold.Request{Seats: seats, GA: &hold.GA{Section: "S", Count: 1}}, apperr.Invalid},
		{"companion with best", b, hold.Request{Best: &hold.Best{Count: 1}, WithCompanion: true}, apperr.Invalid},
		{"key with named seats", b, hold.Request{Seats: seats, Key: "k1"}, apperr.Invalid},
		{"until without a customer", box, hold.Request{Seats: seats, Until: until}, apperr.Invalid},
		{"buyer for a customer", b, hold.Request{Seats: seats, Customer: &customer, Until: until}, apperr.Forbidden},
		{"customer without an email", box, hold.Request{Seats: seats, Customer: &store.Customer{Name: "X"}, Until: until}, apperr.Invalid},
		{"customer without an end", box, hold.Request{Seats: seats, Customer: &customer}, apperr.Invalid},
		{"best count", b, hold.Request{Best: &hold.Best{Count: 0}, Key: "k2"}, apperr.Invalid},
		{"ga count", b, hold.Request{GA: &hold.GA{Section: "S", Count: 11}, Key: "k3"}, apperr.Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.Event, c.req.Source = e.ID, hold.SourceAPI
			if _, err := a.Holds.Hold(context.Background(), c.who, c.req); apperr.CodeOf(err) != c.want {
				t.Fatalf("got %v, want %s", err, c.want)
			}
		})
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, e.ID); n != 0 {
		t.Errorf("%d holds written for refused requests", n)
	}
	if n := count(t, a, `SELECT count(*) FROM hold_requests WHERE event_id = $1`, e.ID); n != 0 {
		t.Errorf("%d keys claimed for refused requests", n)
	}
}
