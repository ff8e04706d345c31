package ticket

import (
	"context"
	"strconv"

	"seatd/internal/money"
	"seatd/internal/store"
)

// Signer signs tickets' codes (*Keys).
type Signer interface {
	Code(ctx context.Context, c Claims) (string, error)
}

// FromDetail is a booking's live tickets as pages, mail and PDFs show
// them, each with its signed code; the cancelled ones are left out (their
// codes no longer admit anyone).
func FromDetail(ctx context.Context, codes Signer, b store.BookingDetail) (Booking, error) {
	out := Booking{Reference: store.FormatReference(b.Reference), Holder: b.Holder,
		Event: Event{Name: b.EventName, Venue: b.Venue, StartsAt: b.StartsAt, TimeZone: b.TimeZone}}
	for _, t := range b.Tickets {
		if t.Cancelled {
			continue
		}
		code, err := codes.Code(ctx, Claims{Org: b.Org, Event: b.Event, Ticket: t.ID, Seat: t.Seat})
		if err != nil {
			return out, err
		}
		tk := OfDetail(t)
		tk.Code = code
		out.Tickets = append(out.Tickets, tk)
	}
	return out, nil
}

// OfDetail is one ticket's place, category and price as tickets show
// them (without its code).
func OfDetail(t store.TicketDetail) Ticket {
	tk := Ticket{Section: t.Section, Category: t.Category}
	if t.PriceMinor > 0 {
		tk.Price = money.Format(t.PriceMinor, t.Currency)
	}
	if t.Standing {
		tk.Place = store.PlaceLabel(t.SectionLabel, t.Number)
	} else {
		tk.Row, tk.Seat = t.Row, strconv.Itoa(t.Number)
	}
	return tk
}
