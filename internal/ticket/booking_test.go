package ticket_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/ticket"
)

// fixedSigner signs every ticket with its id, for tests that look at the
// list rather than the codes.
type fixedSigner struct{}

func (fixedSigner) Code(_ context.Context, c ticket.Claims) (string, error) {
	return c.Ticket.String(), nil
}

// TestFromDetail: a booking's tickets as mail and PDFs show them leave the
// cancelled ones out, and the total sums only the live ones; a free
// booking shows no total.
func TestFromDetail(t *testing.T) {
	live1, live2, gone := uuid.New(), uuid.New(), uuid.New()
	d := store.BookingDetail{Reference: "ABCD1234", Tickets: []store.TicketDetail{
		{ID: live1, Section: "Stalls", Row: "B", Number: 12, PriceMinor: 4500, Currency: "EUR"},
		{ID: gone, Section: "Stalls", Row: "B", Number: 13, PriceMinor: 4500, Currency: "EUR", Cancelled: true},
		{ID: live2, Standing: true, SectionLabel: "G", Number: 94, PriceMinor: 1999, Currency: "EUR"},
	}}
	b, err := ticket.FromDetail(context.Background(), fixedSigner{}, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Tickets) != 2 || b.Tickets[0].Code != live1.String() || b.Tickets[1].Code != live2.String() {
		t.Fatalf("tickets %+v, want the two live ones in order", b.Tickets)
	}
	if want := "64.99 EUR"; b.Total != want {
		t.Errorf("total %q, want %q (the cancelled ticket left out)", b.Total, want)
	}
	for i := range d.Tickets {
		d.Tickets[i].PriceMinor = 0
	}
	if b, _ := ticket.FromDetail(context.Background(), fixedSigner{}, d); b.Total != "" {
		t.Errorf("a free booking's total %q, want none", b.Total)
	}
}
