package api

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/door"
	"seatd/internal/hold"
	"seatd/web/httpx"
)

// Checkins at the door through the JSON API (docs/architecture.md#check-ins):
// a scan, a batch of scans an offline scanner kept, what a scanner needs to
// decide offline, the counts and conflicts staff watch, and the export.

// DoorCore is what the door's routes ask of the door; *door.Door
// satisfies it.
type DoorCore interface {
	Admit(ctx context.Context, a hold.Actor, event uuid.UUID, code, entrance string, scannedAt time.Time) (door.Result, error)
	Sync(ctx context.Context, a hold.Actor, event uuid.UUID, scans []door.Scan) ([]door.Result, error)
	Key(ctx context.Context, a hold.Actor, event uuid.UUID) (door.KeyInfo, error)
	Counts(ctx context.Context, a hold.Actor, event uuid.UUID) (door.Counts, error)
	Conflicts(ctx context.Context, a hold.Actor, event uuid.UUID) ([]door.Conflict, error)
	WriteCSV(ctx context.Context, a hold.Actor, event uuid.UUID, w io.Writer) error
}

var _ DoorCore = (*door.Door)(nil)

// Door answers scanners and the staff who watch the door.
type Door struct {
	dec  *httpx.Decoder
	core DoorCore
}

type checkinInput struct {
	Code      string    `json:"code" validate:"required,max=400"`
	Entrance  string    `json:"entrance" validate:"max=60"`
	ScannedAt time.Time `json:"scanned_at"`
}

// Checkin admits one ticket: 201 admitted; 409 already admitted (when and
// where) or cancelled; 404 a code of another event; 422 a forged or
// malformed code.
func (d *Door) Checkin(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in checkinInput
	if err := d.dec.JSON(w, r, &in); err != nil {
		return err
	}
	res, err := d.core.Admit(r.Context(), a, event, in.Code, in.Entrance, in.ScannedAt)
	if err != nil {
		return err
	}
	status := http.StatusConflict
	if res.Outcome == door.Admitted {
		status = http.StatusCreated
	}
	httpx.WriteJSON(w, status, res)
	return nil
}

type syncInput struct {
	Scans []door.Scan `json:"scans" validate:"required"`
}

// Sync records what an offline scanner admitted and answers each scan, in
// the order sent.
func (d *Door) Sync(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in syncInput
	if err := d.dec.JSON(w, r, &in); err != nil {
		return err
	}
	res, err := d.core.Sync(r.Context(), a, event, in.Scans)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"results": res})
	return nil
}

// Key answers what a scanner needs to decide offline: the event's public
// key, the revoked and admitted tickets, the seats' labels.
func (d *Door) Key(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	k, err := d.core.Key(r.Context(), a, event)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, k)
	return nil
}

// Counts answers how many got in, per entrance, and to staff the
// conflicts offline scanners reported (door staff get null: the conflicts
// are for the box office to sort out).
func (d *Door) Counts(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	c, err := d.core.Counts(r.Context(), a, event)
	if err != nil {
		return err
	}
	var conflicts []door.Conflict
	if a.Role != hold.RoleDoor {
		if conflicts, err = d.core.Conflicts(r.Context(), a, event); err != nil {
			return err
		}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"counts": c, "conflicts": conflicts})
	return nil
}

// CSV exports the event's check-ins.
func (d *Door) CSV(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="checkins.csv"`)
	return d.core.WriteCSV(r.Context(), a, event, w)
}
