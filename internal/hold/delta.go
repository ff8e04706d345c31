package hold

import (
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/uuid"

	"seatd/internal/store"
)

// Delta kinds: what happened to a seat.
const (
	KindHeld      = "held"
	KindReleased  = "released"
	KindExpired   = "expired"
	KindSold      = "sold"
	KindBlocked   = "blocked"
	KindUnblocked = "unblocked"
	KindExtended  = "extended"
	// KindCancelled is a sold seat whose ticket was cancelled: available
	// again.
	KindCancelled = "cancelled"
	// KindOffered is a seat held for a waiting buyer (a waitlist offer).
	KindOffered = "offered"
	// KindSync is a seat whose state changed while this process was not
	// listening (found by a reload from Postgres).
	KindSync = "sync"
)

// Delta is one committed change of one seat. It is published only after
// the change is committed in Postgres.
type Delta struct {
	Org       uuid.UUID        `json:"org"`
	Event     uuid.UUID        `json:"event"`
	Seat      uuid.UUID        `json:"seat"`
	Kind      string           `json:"kind"`
	Status    store.SeatStatus `json:"status"`
	Prev      store.SeatStatus `json:"prev,omitempty"`
	Version   int64            `json:"version"`
	HoldID    uuid.UUID        `json:"hold_id,omitzero"`
	UserID    uuid.UUID        `json:"user_id,omitzero"`
	HeldUntil time.Time        `json:"held_until,omitzero"`
	Fence     int64            `json:"fence,omitempty"`
	Actor     uuid.UUID        `json:"actor,omitzero"`
	// PrevUser is who held the seat before a change that ended their hold
	// (released, expired), so a live view can tell that buyer why the
	// seat left their cart, whichever process they are connected to.
	PrevUser uuid.UUID `json:"prev_user,omitzero"`
	At       time.Time `json:"at"`
	// Locked says the hold was made on the fast path under a Redis lock
	// its process took for it, naming it and its held_until: Redis has it
	// as Postgres does. A process that applies such a delta from another
	// process counts the hold as known, as the maker does (eventState.known),
	// so its follower neither reads the hold back from the feed nor syncs
	// it to Redis.
	Locked bool `json:"locked,omitempty"`
}

// message is what travels on an event's channel.
type message struct {
	// From names the sending process, so it can skip its own messages. It
	// is the first field, so the encoded message starts with it and the
	// sender recognises its own without decoding (see ownPrefix).
	From   uuid.UUID `json:"from,omitzero"`
	Deltas []Delta   `json:"deltas,omitempty"`
	// Resync asks every process to reload the event from Postgres (sent
	// after a reconcile).
	Resync bool `json:"resync,omitempty"`
	// Settings says the event's settings (status, sales window, hold TTL
	// and cap) changed: every process reloads them.
	Settings bool `json:"settings,omitempty"`
	// Waitlist says the event's waitlist changed (see WaitlistChange).
	Waitlist *WaitlistChange `json:"waitlist,omitempty"`
}

// WaitlistChange is a committed change of an event's waitlist, told to
// live views so buyers see their place in line move.
type WaitlistChange struct {
	// Users are the buyers whose own entries changed (joined, left,
	// offered).
	Users []uuid.UUID `json:"users,omitempty"`
	// Line says places in line may have moved for everyone behind the
	// change (an entry left the line or was offered); a join moves no one
	// else.
	Line bool `json:"line,omitempty"`
}

// ownPrefix is how every message process id sends begins.
func ownPrefix(id uuid.UUID) []byte { return []byte(`{"from":"` + id.String() + `"`) }

// decodeMessage decodes a message from another process. Every process
// decodes every other's messages, so it uses the json v2 decoder, which
// decodes a message of deltas in less than half encoding/json's time.
func decodeMessage(b []byte) (message, error) {
	var m message
	err := jsonv2.Unmarshal(b, &m)
	return m, err
}

func holdDelta(h store.Hold, kind string, status, prev store.SeatStatus, actor uuid.UUID, at time.Time) Delta {
	d := Delta{Org: h.OrgID, Event: h.EventID, Seat: h.SeatID, Kind: kind, Status: status, Prev: prev,
		Version: h.SeatVersion, Fence: h.Fence, Actor: actor, At: at}
	if status == store.Held {
		d.HoldID, d.UserID, d.HeldUntil = h.ID, h.UserID, h.HeldUntil
	} else {
		d.PrevUser = h.UserID
	}
	return d
}
