package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// WaitlistCore is what the waitlist routes ask of the hold core;
// *hold.Waitlist satisfies it.
type WaitlistCore interface {
	Join(ctx context.Context, a hold.Actor, event uuid.UUID, w hold.WaitFor) (store.WaitlistEntry, error)
	Mine(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.WaitlistEntry, error)
	Line(ctx context.Context, a hold.Actor, event uuid.UUID, limit int) (int, []store.WaitlistEntry, error)
	Leave(ctx context.Context, a hold.Actor, id uuid.UUID) error
}

// Waitlist puts buyers in line for seats and takes them out of it, and
// shows staff the line (docs/architecture.md#the-waitlist).
type Waitlist struct {
	dec  *httpx.Decoder
	core WaitlistCore
}

// waitlistInput is a request to wait for seats.
type waitlistInput struct {
	Count      int    `json:"count" validate:"required,min=1,max=100"`
	Category   string `json:"category" validate:"max=40"`
	Section    string `json:"section" validate:"max=100"`
	Accessible bool   `json:"accessible"`
}

type waitlistJSON struct {
	ID         string     `json:"id"`
	EventID    string     `json:"event_id"`
	Count      int        `json:"count"`
	Category   string     `json:"category,omitempty"`
	SectionID  string     `json:"section_id,omitempty"`
	Section    string     `json:"section,omitempty"`
	Accessible bool       `json:"accessible"`
	Status     string     `json:"status"`
	Position   int        `json:"position"`
	HoldIDs    []string   `json:"hold_ids,omitempty"`
	OfferUntil *time.Time `json:"offer_until,omitempty"`
	Offer      string     `json:"offer,omitempty"` // offered entries: held (in the cart), bought or ended
	CreatedAt  time.Time  `json:"created_at"`
}

func waitlistView(e store.WaitlistEntry) waitlistJSON {
	v := waitlistJSON{ID: e.ID.String(), EventID: e.Event.String(), Count: e.Seats, Category: e.Category,
		Section: e.SectionLabel, Accessible: e.Accessible, Status: e.Status, Position: e.Position, Offer: e.Offer,
		CreatedAt: e.CreatedAt}
	if e.SectionLabel != "" {
		v.SectionID = e.Section.String()
	}
	for _, id := range e.HoldIDs {
		v.HoldIDs = append(v.HoldIDs, id.String())
	}
	if !e.OfferUntil.IsZero() {
		v.OfferUntil = &e.OfferUntil
	}
	return v
}

// Join puts the buyer in line: 201 {id, position, ...}.
func (h *Waitlist) Join(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in waitlistInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	e, err := h.core.Join(r.Context(), a, event, hold.WaitFor{Count: in.Count,
		Category: strings.TrimSpace(in.Category), Section: strings.TrimSpace(in.Section), Accessible: in.Accessible})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, waitlistView(e))
	return nil
}

// Mine lists the buyer's entries for the event (waiting, offered).
func (h *Waitlist) Mine(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	return httpx.List(w, "entries", waitlistView)(h.core.Mine(r.Context(), a, event))
}

// Line is the staff's view: how many wait, and the first in line.
func (h *Waitlist) Line(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	n, first, err := h.core.Line(r.Context(), a, event, 20)
	if err != nil {
		return err
	}
	out := make([]waitlistJSON, len(first))
	for i, e := range first {
		out[i] = waitlistView(e)
		out[i].HoldIDs = nil
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"waiting": n, "first": out})
	return nil
}

// Leave takes an entry out of line: 204.
func (h *Waitlist) Leave(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "entry")
	if err != nil {
		return err
	}
	if err := h.core.Leave(r.Context(), a, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
