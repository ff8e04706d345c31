package door

import (
	"context"
	"io"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/csvsafe"
	"seatd/internal/hold"
	"seatd/internal/store"
)

// CSVColumns are the columns of checkins.csv, in order.
var CSVColumns = store.CheckinExportColumns

// WriteCSV writes an event's admissions as checkins.csv (organizers):
// a header, then one row per admitted ticket by scanned_at, streamed in
// constant memory. Cells that a spreadsheet would run as a formula are
// escaped (csvsafe.Cell). The event is checked before anything is written, so
// a caller may still answer an error with a status; an error after that
// means a truncated file.
func (d *Door) WriteCSV(ctx context.Context, a hold.Actor, event uuid.UUID, w io.Writer) error {
	if a.Role != hold.RoleOrganizer {
		return apperr.E(apperr.Forbidden, "only organizers can export")
	}
	if err := d.st.EventExists(ctx, a.Org, event); err != nil {
		return err
	}
	return csvsafe.Write(w, CSVColumns, func(row func([]string) error) error {
		return d.st.ExportCheckins(ctx, a.Org, event, row)
	})
}
