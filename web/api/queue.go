package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/waitroom"
	"seatd/web/httpx"
	"seatd/web/queue"
)

// QueueLine is what the queue routes ask of the waiting room;
// *queue.Gate satisfies it.
type QueueLine interface {
	Stand(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, join bool) (queue.Status, error)
}

// Queue answers a visitor's place in an event's waiting room
// (docs/waiting-room.md).
type Queue struct {
	dec  *httpx.Decoder
	line QueueLine
}

// QueueJSON is a visitor's standing in line.
type QueueJSON struct {
	// State is before_opening, waiting, admitted or not_in_line.
	State waitroom.State `json:"state"`
	// Position (1-based) and Ahead are 0 unless waiting: before the
	// opening the places are not drawn yet.
	Position int64 `json:"position"`
	Ahead    int64 `json:"ahead"`
	InLine   int64 `json:"in_line"`
	// ETASeconds is the expected wait from the measured admission rate
	// (before the opening: the time to it); null when unknown.
	ETASeconds        *int64     `json:"eta_seconds"`
	Admitted          bool       `json:"admitted"`
	AdmittedPerMinute int64      `json:"admitted_per_minute"`
	OpensAt           *time.Time `json:"opens_at,omitempty"`
	// WaitingRoom is false when the event has no waiting room in front of
	// the caller: the map is open.
	WaitingRoom bool `json:"waiting_room"`
	// PollAfterSeconds is when to ask again.
	PollAfterSeconds int    `json:"poll_after_seconds"`
	MapURL           string `json:"map_url"`
}

// QueueView is st as the API answers it.
func QueueView(event uuid.UUID, st queue.Status) QueueJSON {
	out := QueueJSON{State: st.State, Position: st.Position, Ahead: st.Ahead, InLine: st.InLine,
		Admitted: st.State == waitroom.Admitted, AdmittedPerMinute: st.AdmittedPerMinute, WaitingRoom: st.On,
		PollAfterSeconds: int(st.PollAfter.Round(time.Second) / time.Second), MapURL: "/e/" + event.String()}
	if st.ETA >= 0 {
		n := int64(st.ETA.Round(time.Second) / time.Second)
		out.ETASeconds = &n
	}
	if !st.OpensAt.IsZero() {
		t := st.OpensAt.UTC()
		out.OpensAt = &t
	}
	return out
}

// Join puts the caller in the event's line (or finds their place: one
// place per account, whatever the number of tabs).
func (h *Queue) Join(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := idAndNoInput(h.dec, w, r, "event")
	if err != nil {
		return err
	}
	return h.answer(w, r, a, event, true)
}

// Mine answers the caller's place without joining.
func (h *Queue) Mine(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	return h.answer(w, r, a, event, false)
}

func (h *Queue) answer(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, join bool) error {
	st, err := h.line.Stand(w, r, a, event, join)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, QueueView(event, st))
	return nil
}
