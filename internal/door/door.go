// Package door admits ticket holders: a scanned code is verified (package
// ticket), and Postgres records at most one admission per ticket, however
// many scanners and processes scan it at once; a Redis cache of recent
// scans answers a repeated scan at a door without Postgres. Scanners that
// lose the network keep admitting with the event's public key and the
// lists Key gives them, and Sync records what they did, flagging any
// ticket that got in twice. It knows no HTTP. See docs/architecture.md,
// "Check-ins".
package door

import (
	"context"
	"crypto/ed25519"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/ticket"
)

// Store is what the door keeps in Postgres (store.Checkins).
type Store interface {
	Admit(ctx context.Context, a store.Admission) (store.AdmitOutcome, error)
	Sync(ctx context.Context, a store.Admission) (store.AdmitOutcome, error)
	DoorList(ctx context.Context, org, event uuid.UUID) (store.DoorList, error)
	Counts(ctx context.Context, org, event uuid.UUID) (store.CheckinCounts, error)
	Conflicts(ctx context.Context, org, event uuid.UUID) ([]store.CheckinConflict, error)
	ExportCheckins(ctx context.Context, org, event uuid.UUID, row func([]string) error) error
	EventExists(ctx context.Context, org, event uuid.UUID) error
	Attendees(ctx context.Context, org, event uuid.UUID, f store.AttendeeFilter) ([]store.Attendee, error)
}

// Codes verifies ticket codes and gives the events' public keys
// (*ticket.Keys).
type Codes interface {
	Verify(ctx context.Context, org, event uuid.UUID, code string) (ticket.Claims, error)
	Public(ctx context.Context, org, event uuid.UUID) (ed25519.PublicKey, error)
}

var (
	_ Store = (*store.Checkins)(nil)
	_ Codes = (*ticket.Keys)(nil)
)

// Options are the door's settings.
type Options struct {
	// KeyPrefix is the Redis key prefix (SEATD_KEY_PREFIX).
	KeyPrefix string
	// RecentScans is how long a ticket's admission stays in the
	// recent-scan cache (10 minutes when zero): long enough for a second
	// scan of the same ticket at the door, short enough that the cache
	// stays small.
	RecentScans time.Duration
	// MaxSyncScans caps the scans of one Sync (1000 when zero).
	MaxSyncScans int
	// Live announces admissions to the dashboards (nil: none are).
	Live Live
}

// Door admits the tickets of every event. Safe for concurrent use.
type Door struct {
	st    Store
	codes Codes
	rdb   redis.Cmdable
	opts  Options
	now   func() time.Time
}

// New returns a door on st, checking codes with codes and caching recent
// scans in rdb (nil: no cache, every scan goes to Postgres).
func New(st Store, codes Codes, rdb redis.Cmdable, o Options) *Door {
	if o.RecentScans <= 0 {
		o.RecentScans = 10 * time.Minute
	}
	if o.MaxSyncScans <= 0 {
		o.MaxSyncScans = 1000
	}
	return &Door{st: st, codes: codes, rdb: rdb, opts: o, now: time.Now}
}

// Outcome is the answer to a scan, as the API names it.
type Outcome string

// Outcomes. Admit answers Forged and NotFound as errors (ticket.ErrForged
// or ticket.ErrMalformed, 422; ticket.ErrOtherEvent or apperr.NotFound,
// 404); Sync, which answers each scan of a batch, as results.
const (
	Admitted        Outcome = "admitted"
	AlreadyAdmitted Outcome = "already_admitted"
	Cancelled       Outcome = "cancelled"
	Forged          Outcome = "forged"
	NotFound        Outcome = "not_found"
)

// Result is the answer to one scan, shaped as the API sends it: 201 for
// admitted, 409 for already_admitted and cancelled.
type Result struct {
	Outcome Outcome   `json:"result"`
	Ticket  uuid.UUID `json:"ticket,omitzero"`
	// Seat is the ticket's seat; its label and category are unknown when
	// the recent-scan cache answered (the scanner has them from Key).
	Seat   *Seat  `json:"seat,omitempty"`
	Holder string `json:"holder,omitempty"` // the box-office customer's name, when known
	// At and Entrance are the ticket's admission: when (the scanner's
	// clock) and where it got in. AdmittedAt is when the server recorded
	// it.
	At         time.Time `json:"at,omitzero"`
	Entrance   string    `json:"entrance,omitempty"`
	AdmittedAt time.Time `json:"admitted_at,omitzero"`
	// Conflict (Sync only): the ticket got in twice while scanners were
	// offline, or got in cancelled; staff see it in Conflicts.
	Conflict bool `json:"conflict,omitempty"`
	// Cached: the recent-scan cache answered, without Postgres.
	Cached bool `json:"-"`
}

// Seat is a ticket's seat as the door shows it.
type Seat struct {
	ID       uuid.UUID `json:"id"`
	Label    string    `json:"label,omitempty"`    // "A-3-12", or a standing place ("G place 94")
	Category string    `json:"category,omitempty"` // the category's name
}

// result is what the door answers for a recorded outcome.
func result(o store.AdmitOutcome) Result {
	r := Result{Ticket: o.Ticket.ID, Holder: o.Ticket.Holder, Conflict: o.Conflict != nil,
		Seat: &Seat{ID: o.Ticket.SeatID, Label: o.Ticket.Seat, Category: o.Ticket.Category}}
	switch {
	case o.Admitted:
		r.Outcome = Admitted
	case o.Ticket.Cancelled:
		r.Outcome = Cancelled
		return r
	default:
		r.Outcome = AlreadyAdmitted
	}
	r.At, r.Entrance, r.AdmittedAt = o.Checkin.ScannedAt, o.Checkin.Entrance, o.Checkin.AdmittedAt
	return r
}

// scanner says whether a may scan tickets and read what scanners need.
func scanner(a hold.Actor) error {
	switch a.Role {
	case hold.RoleDoor, hold.RoleBoxOffice, hold.RoleOrganizer:
		return nil
	}
	return apperr.E(apperr.Forbidden, "only door staff, the box office and organizers scan tickets")
}

// DefaultEntrance names the entrance of a scan that names none.
const DefaultEntrance = "main"

// maxEntrance is the longest entrance name, in characters (migration 031).
const maxEntrance = 60

// entrance is a scan's entrance as stored, or why it cannot be.
func entrance(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultEntrance, true
	}
	if utf8.RuneCountInString(s) > maxEntrance || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return "", false
	}
	return s, true
}

// scanTime is a scan's time as stored: the scanner's clock to the
// millisecond (what a browser's clock gives, so a scan synced again
// compares equal), now when it gave none, and never later than now (a
// time still to come is a wrong clock).
func (d *Door) scanTime(at time.Time) time.Time {
	now := d.now().UTC()
	if at.IsZero() || at.After(now) {
		at = now
	}
	return at.UTC().Truncate(time.Millisecond)
}
