package door

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
)

// Scan is a code an offline scanner admitted, sent when it is back.
type Scan struct {
	Code      string    `json:"code"`
	Entrance  string    `json:"entrance"`
	ScannedAt time.Time `json:"scanned_at"`
}

// Sync records the scans an offline scanner admitted, in scanned_at order
// whatever order they come in, and answers each (results in the order of
// scans). A ticket's first admission by scanned_at stands, wherever it
// was recorded from: a later scan of it is already_admitted and flagged,
// an earlier one takes its place and the one it displaced is flagged; a
// cancelled ticket is cancelled and flagged (Result.Conflict; staff list
// them with Conflicts). A forged or malformed code is Forged, one of
// another event NotFound; neither is recorded. Sending the same scans
// again changes nothing and gets the same answers, so a scanner that lost
// the reply just sends them again.
func (d *Door) Sync(ctx context.Context, a hold.Actor, event uuid.UUID, scans []Scan) ([]Result, error) {
	if err := scanner(a); err != nil {
		return nil, err
	}
	if len(scans) > d.opts.MaxSyncScans {
		return nil, &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("at most %d scans at once", d.opts.MaxSyncScans),
			Fields: map[string]string{"scans": fmt.Sprintf("must have at most %d scans; send the rest after", d.opts.MaxSyncScans)}}
	}
	ents := make([]string, len(scans))
	fields := map[string]string{}
	for i, s := range scans {
		var ok bool
		if ents[i], ok = entrance(s.Entrance); !ok {
			fields[fmt.Sprintf("scans[%d].entrance", i)] = "must be at most 60 characters, without control characters"
		}
	}
	if len(fields) > 0 {
		return nil, &apperr.Error{Code: apperr.Invalid, Message: "some scans name an entrance that cannot be", Fields: fields}
	}
	if err := d.st.EventExists(ctx, a.Org, event); err != nil {
		return nil, err
	}
	order := make([]int, len(scans))
	at := make([]time.Time, len(scans))
	for i, s := range scans {
		order[i], at[i] = i, d.scanTime(s.ScannedAt)
	}
	slices.SortStableFunc(order, func(i, j int) int { return at[i].Compare(at[j]) })
	results := make([]Result, len(scans))
	for _, i := range order {
		r, err := d.syncOne(ctx, a, event, scans[i].Code, ents[i], at[i])
		if err != nil {
			return nil, err
		}
		results[i] = r
	}
	return results, nil
}

func (d *Door) syncOne(ctx context.Context, a hold.Actor, event uuid.UUID, code, ent string, at time.Time) (Result, error) {
	c, err := d.codes.Verify(ctx, a.Org, event, code)
	switch {
	case apperr.CodeOf(err) == apperr.Invalid:
		return Result{Outcome: Forged}, nil
	case errors.Is(err, apperr.ErrNotFound):
		return Result{Outcome: NotFound}, nil
	case err != nil:
		return Result{}, err
	}
	out, err := d.st.Sync(ctx, store.Admission{Org: a.Org, Event: event, Ticket: c.Ticket, Seat: c.Seat,
		Entrance: ent, ScannedAt: at, By: a.User, Offline: true})
	if errors.Is(err, apperr.ErrNotFound) {
		return Result{Outcome: NotFound, Ticket: c.Ticket}, nil
	}
	if err != nil {
		return Result{}, err
	}
	r := result(out)
	d.remember(ctx, a.Org, event, r)
	d.announce(ctx, a.Org, event, r)
	return r, nil
}
