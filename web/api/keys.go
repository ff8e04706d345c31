package api

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// KeyCore makes and revokes API keys; *auth.APIKeys satisfies it.
type KeyCore interface {
	Create(ctx context.Context, org, by uuid.UUID, name, role string) (store.APIKey, string, error)
	Revoke(ctx context.Context, org, id uuid.UUID) (store.APIKey, error)
}

// KeyList lists an organization's API keys; *store.Accounts satisfies it.
type KeyList interface {
	APIKeys(ctx context.Context, org uuid.UUID) ([]store.APIKey, error)
}

// Keys makes, lists and revokes the organization's API keys; the actor of
// a request made with a key is session.Load's.
type Keys struct {
	dec  *httpx.Decoder
	core KeyCore
	list KeyList
}

// KeyInput is a key to make, from JSON or the organizer's page.
type KeyInput struct {
	Name string `json:"name" validate:"required,max=100"`
	Role string `json:"role" validate:"required,oneof=buyer organizer box_office"`
}

type apiKeyJSON struct {
	ID         uuid.UUID  `json:"id"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	Hint       string     `json:"hint"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func apiKeyView(k store.APIKey) apiKeyJSON {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return apiKeyJSON{ID: k.ID, Name: k.Name, Role: k.Role, Hint: k.Hint, CreatedAt: k.CreatedAt.UTC(),
		LastUsedAt: utc(k.LastUsedAt), RevokedAt: utc(k.RevokedAt)}
}

// Create makes a key; its secret is in this answer only.
func (h *Keys) Create(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in KeyInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	k, secret, err := h.core.Create(r.Context(), a.Org, a.User, in.Name, in.Role)
	if err != nil {
		return err
	}
	out := struct {
		apiKeyJSON
		Key string `json:"key"`
	}{apiKeyView(k), secret}
	httpx.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// List answers the organization's keys, revoked ones too.
func (h *Keys) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return httpx.List(w, "api_keys", apiKeyView)(h.list.APIKeys(r.Context(), a.Org))
}

// Revoke revokes a key everywhere at once.
func (h *Keys) Revoke(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "key")
	if err != nil {
		return err
	}
	k, err := h.core.Revoke(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiKeyView(k))
	return nil
}
