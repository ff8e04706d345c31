package hold

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// orphanSeat is the refusal of a hold that would leave seats alone in
// their row under the event's strict orphan rule.
func orphanSeat(ids []uuid.UUID, label func(uuid.UUID) string) error {
	e := &apperr.Error{Code: apperr.OrphanSeat}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		e.Seats = append(e.Seats, id.String())
		names = append(names, label(id))
	}
	if len(names) == 1 {
		e.Message = fmt.Sprintf("this would leave seat %s alone between taken seats; hold it too or choose seats beside it", names[0])
	} else {
		e.Message = fmt.Sprintf("this would leave seats %v alone between taken seats; hold them too or choose other seats", names)
	}
	return e
}

// rowKeys names the rows of seats, each once, for store.HoldParams.Rows:
// their advisory lock keys (store.RowKey).
func rowKeys(event uuid.UUID, seats []store.Seat) []uint64 {
	keys := make([]uint64, 0, 1)
	for _, st := range seats {
		if k := uint64(store.RowKey(event, st.SectionID, st.Row)); !slices.Contains(keys, k) { // #nosec G115 -- a key's bits
			keys = append(keys, k)
		}
	}
	return keys
}

// heldBack reports whether accessible and companion seats of the event
// are still kept for buyers who ask for them at now. An event without a
// release time never holds them back.
func heldBack(set *store.Event, now time.Time) bool {
	return set.AccessibleReleaseAt != nil && now.Before(*set.AccessibleReleaseAt)
}

// accessibleGate refuses a buyer who did not ask for accessible seating a
// seat held back for those who did. Staff are not bound. The gate reads
// the cached event settings, as the cheap early refusal: the hold
// statement decides from the event row (accessible_open), so a release
// time moved behind this process's back is enforced all the same.
func accessibleGate(set *store.Event, a Actor, asked bool, seats []store.Seat, now time.Time, label func(uuid.UUID) string) error {
	if a.Staff() || asked || !heldBack(set, now) {
		return nil
	}
	for _, st := range seats {
		if st.Accessible || st.Companion {
			return heldBackErr(st.ID, *set.AccessibleReleaseAt, label)
		}
	}
	return nil
}

// heldBackErr is the refusal of an accessible or companion seat kept for
// buyers who ask for accessible seating until release.
func heldBackErr(id uuid.UUID, release time.Time, label func(uuid.UUID) string) error {
	return &apperr.Error{Code: apperr.AccessibleReserved, Seats: []string{id.String()},
		Message: fmt.Sprintf("seat %s is kept for buyers who need accessible seating until %s; tick \"I need accessible seating\" if you do",
			label(id), release.UTC().Format(time.RFC3339))}
}
