package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/csvsafe"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
	"seatd/web/session"
)

var exportColumns = map[string][]string{
	store.ExportSeats:    store.SeatExportColumns,
	store.ExportBookings: store.BookingExportColumns,
	store.ExportAudit:    store.AuditExportColumns,
}

// ExportStore streams an event's exports; *store.Events satisfies it.
type ExportStore interface {
	Event(ctx context.Context, org, id uuid.UUID) (store.Event, error)
	Export(ctx context.Context, org, event uuid.UUID, kind string, row func([]string) error) error
}

// Exports streams an event's seats, bookings and audit log as CSV files
// (organizer).
type Exports struct {
	store ExportStore
	log   *slog.Logger
}

// CSV streams an export of an event as CSV: seats.csv, bookings.csv or
// audit.csv (kind: store.ExportSeats, ...), through csvsafe (cells a
// spreadsheet would run as formulas are escaped; the file grows as it is
// written).
func (h *Exports) CSV(kind string) session.Handler {
	return func(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
		event, err := httpx.PathID(r, "event")
		if err != nil {
			return err
		}
		if a.Role != hold.RoleOrganizer {
			return apperr.E(apperr.Forbidden, "only organizers can export")
		}
		// Another organization's event is a 404, not an empty file.
		if _, err := h.store.Event(r.Context(), a.Org, event); err != nil {
			return err
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+kind+`-`+event.String()+`.csv"`)
		w.Header().Set("Cache-Control", "no-store")
		n := 0
		err = csvsafe.Write(w, exportColumns[kind], func(row func([]string) error) error {
			return h.store.Export(r.Context(), a.Org, event, kind, func(cells []string) error {
				n++
				return row(cells)
			})
		})
		if err != nil {
			// The status line is sent: the truncated file is all the
			// client gets; the log says why.
			h.log.ErrorContext(r.Context(), "export failed midway", "kind", kind, "org", a.Org, "event", event, "rows", n, "err", err)
		}
		return nil
	}
}
