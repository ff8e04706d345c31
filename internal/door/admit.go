package door

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
)

// Admit answers a code scanned at an entrance of event (DefaultEntrance
// when empty) at scannedAt (the scanner's clock; now when zero): the
// ticket is admitted, or was already (when and where), or is cancelled.
// Exactly one scan of a ticket is ever admitted, whatever the scanners and
// processes. A malformed or forged code is an error of class Invalid
// (ticket.ErrMalformed, ticket.ErrForged), a code of another event or
// organization one of class NotFound (ticket.ErrOtherEvent); so is an
// event that is not the actor's.
func (d *Door) Admit(ctx context.Context, a hold.Actor, event uuid.UUID, code, entranceName string, scannedAt time.Time) (Result, error) {
	if err := scanner(a); err != nil {
		return Result{}, err
	}
	ent, ok := entrance(entranceName)
	if !ok {
		return Result{}, &apperr.Error{Code: apperr.Invalid, Message: "the entrance name is too long or has control characters",
			Fields: map[string]string{"entrance": "must be at most 60 characters, without control characters"}}
	}
	c, err := d.codes.Verify(ctx, a.Org, event, code)
	if err != nil {
		return Result{}, err
	}
	if r, ok := d.recall(ctx, a.Org, event, c.Ticket, c.Seat); ok {
		return r, nil
	}
	out, err := d.st.Admit(ctx, store.Admission{Org: a.Org, Event: event, Ticket: c.Ticket, Seat: c.Seat,
		Entrance: ent, ScannedAt: d.scanTime(scannedAt), By: a.User})
	if err != nil {
		// A validly signed code of a ticket that is not there.
		return Result{}, err
	}
	r := result(out)
	d.remember(ctx, a.Org, event, r)
	d.announce(ctx, a.Org, event, r)
	return r, nil
}
