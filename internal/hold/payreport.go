package hold

// What organizers see of payments: figures per category, and
// payments.csv.

import (
	"context"
	"io"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/csvsafe"
	"seatd/internal/store"
)

// PaymentCSVColumns are the columns of payments.csv, in order.
var PaymentCSVColumns = store.PaymentExportColumns

// Summary is an event's payment figures per price category and currency
// for staff: paid, pending (payments not settled and not past their
// deadline) and refunded, each in minor units with its count of seats.
func (p *Payments) Summary(ctx context.Context, a Actor, event uuid.UUID) ([]store.PaymentSummary, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can see an event's payments")
	}
	if _, err := p.e.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return p.e.store.Payments.Summary(ctx, a.Org, event)
}

// WriteCSV writes an event's payments as payments.csv (organizers): a
// header, then one row per payment, oldest first, streamed in constant
// memory. Cells a spreadsheet would run as a formula (an email, a
// provider's message starting with =, +, - or @) are escaped
// (csvsafe.Cell). The event is checked before anything is written, so a
// caller may still answer an error with a status; an error after that
// means a truncated file.
func (p *Payments) WriteCSV(ctx context.Context, a Actor, event uuid.UUID, w io.Writer) error {
	if a.Role != RoleOrganizer {
		return apperr.E(apperr.Forbidden, "only organizers can export")
	}
	if _, err := p.e.store.Events.Event(ctx, a.Org, event); err != nil {
		return err
	}
	return csvsafe.Write(w, PaymentCSVColumns, func(row func([]string) error) error {
		return p.e.store.Payments.ExportPayments(ctx, a.Org, event, row)
	})
}
