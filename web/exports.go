package web

import (
	"encoding/csv"
	"net/http"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// exportFlushEvery is how many rows go out per flush: the client sees the
// file grow, and the server holds a few kilobytes, whatever the event's
// size.
const exportFlushEvery = 500

var exportColumns = map[string][]string{
	store.ExportSeats:    store.SeatExportColumns,
	store.ExportBookings: store.BookingExportColumns,
	store.ExportAudit:    store.AuditExportColumns,
}

// exportCSV streams an export of an event as CSV (organizer): seats.csv,
// bookings.csv or audit.csv.
func (s *Server) exportCSV(kind string) func(http.ResponseWriter, *http.Request, hold.Actor) error {
	return func(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
		event, err := httpx.PathID(r, "event")
		if err != nil {
			return err
		}
		if a.Role != hold.RoleOrganizer {
			return apperr.E(apperr.Forbidden, "only organizers can export")
		}
		// Another organization's event is a 404, not an empty file.
		if _, err := s.deps.Store.Events.Event(r.Context(), a.Org, event); err != nil {
			return err
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+kind+`-`+event.String()+`.csv"`)
		w.Header().Set("Cache-Control", "no-store")
		cw := csv.NewWriter(w)
		flusher, _ := w.(http.Flusher)
		if err := cw.Write(exportColumns[kind]); err != nil {
			return nil // the client went away
		}
		n := 0
		err = s.deps.Store.Events.Export(r.Context(), a.Org, event, kind, func(row []string) error {
			if err := cw.Write(row); err != nil {
				return err
			}
			if n++; n%exportFlushEvery == 0 {
				cw.Flush()
				if flusher != nil {
					flusher.Flush()
				}
			}
			return cw.Error()
		})
		cw.Flush()
		if err != nil {
			// The status line is sent: the truncated file is all the
			// client gets; the log says why.
			s.log.ErrorContext(r.Context(), "export failed midway", "kind", kind, "org", a.Org, "event", event, "rows", n, "err", err)
		}
		return nil
	}
}
