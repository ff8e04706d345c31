package hold

// Who asks: the actor of a request, their role, and where a hold came
// from.

import (
	"github.com/google/uuid"

	"seatd/internal/apperr"
)

// Role is what an actor may do. It lives in the hold core, not in auth,
// because the core's use cases are what roles decide (Actor.Staff, who
// may hold, release others' holds, block seats, reconcile); auth only
// stores it on an account (as text, store.User.Role) and checks its name.
type Role string

// Roles.
const (
	RoleBuyer     Role = "buyer"
	RoleOrganizer Role = "organizer"
	RoleBoxOffice Role = "box_office"
	// RoleDoor scans tickets at the door (package door) and nothing else.
	RoleDoor Role = "door"
)

// Hold sources.
const (
	SourceWeb       = "web"
	SourceAPI       = "api"
	SourceBoxOffice = "box_office"
)

// Actor is who asks: always taken from the server session, never from
// request input.
type Actor struct {
	Org  uuid.UUID
	User uuid.UUID
	Role Role
	// HoldCap, when above 0, lowers a buyer's cap on active holds per
	// event to it (a new account's, decided at the edge from the
	// account's age); the event's own cap still applies when lower.
	// Staff are not bound by it.
	HoldCap int
}

// Staff reports whether the actor may act on other people's holds.
func (a Actor) Staff() bool { return a.Role == RoleOrganizer || a.Role == RoleBoxOffice }

// canHold refuses an account whose role takes no holds.
func canHold(a Actor) error {
	if a.Role != RoleBuyer && a.Role != RoleBoxOffice && a.Role != RoleOrganizer {
		return apperr.E(apperr.Forbidden, "this account cannot hold seats")
	}
	return nil
}
