package api

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/web/httpx"
	"seatd/web/session"
)

// SessionDevices lists and ends the signed-in sessions of a user;
// *session.Sessions satisfies it.
type SessionDevices interface {
	Devices(ctx context.Context, a hold.Actor) ([]session.Device, error)
	EndDevice(ctx context.Context, a hold.Actor, id uuid.UUID) error
	EndOthers(ctx context.Context, a hold.Actor) (int, error)
}

// Devices are the signed-in user's sessions (docs/api.md#accounts): listed,
// and ended one or all but the current one. API keys have no sessions,
// and may not end their creator's: 403.
type Devices struct {
	dec      *httpx.Decoder
	sessions SessionDevices
}

// DeviceJSON is one signed-in session as GET /api/v1/me/sessions lists it.
type DeviceJSON struct {
	ID uuid.UUID `json:"id"`
	// Device is a short name from the User-Agent ("Firefox on Linux").
	Device string `json:"device"`
	// IP is the address last seen, by its /24 (IPv4) or /64 (IPv6).
	IP         string    `json:"ip"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	// Current: the session of this request.
	Current bool `json:"current"`
}

func sessionOnly(r *http.Request) error {
	if _, ok := session.APIKeyFrom(r.Context()); ok {
		return apperr.E(apperr.Forbidden, "sessions are managed from a signed-in session, not with an API key")
	}
	return nil
}

// List answers the user's live sessions, newest first.
func (h *Devices) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	if err := sessionOnly(r); err != nil {
		return err
	}
	ds, err := h.sessions.Devices(r.Context(), a)
	if err != nil {
		return err
	}
	out := make([]DeviceJSON, len(ds))
	for i, d := range ds {
		out[i] = DeviceJSON{ID: d.ID, Device: d.Device.Device, IP: d.IP, CreatedAt: d.CreatedAt.UTC(),
			LastSeenAt: d.LastSeenAt.UTC(), Current: d.Current}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string][]DeviceJSON{"sessions": out})
	return nil
}

// End ends one of the user's other sessions: 204; 404 for none of
// theirs; 409 for the current one (sign out instead).
func (h *Devices) End(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	if err := sessionOnly(r); err != nil {
		return err
	}
	id, err := idAndNoInput(h.dec, w, r, "id")
	if err != nil {
		return err
	}
	if err := h.sessions.EndDevice(r.Context(), a, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// EndOthers ends every session of the user but this one: 200 {ended}.
func (h *Devices) EndOthers(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	if err := sessionOnly(r); err != nil {
		return err
	}
	var none struct{}
	if err := h.dec.OptionalJSON(w, r, &none); err != nil {
		return err
	}
	n, err := h.sessions.EndOthers(r.Context(), a)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]int{"ended": n})
	return nil
}
