package api

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/auth"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
	"seatd/web/session"
)

// KeyCore makes and revokes API keys; *auth.APIKeys satisfies it.
type KeyCore interface {
	Create(ctx context.Context, org, by uuid.UUID, req auth.KeyRequest) (store.APIKey, string, error)
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
	// Scopes limit the key (auth.RoleScopes); absent: all its role allows.
	Scopes    []string   `json:"scopes" validate:"omitempty,min=1,max=4,dive,oneof=read holds box_office admin"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// Request is the key to make; maker is the key the request came with,
// if any.
func (in KeyInput) Request(maker *store.APIKey) auth.KeyRequest {
	return auth.KeyRequest{Name: in.Name, Role: in.Role, Scopes: in.Scopes, ExpiresAt: in.ExpiresAt, Maker: maker}
}

type apiKeyJSON struct {
	ID           uuid.UUID  `json:"id"`
	Name         string     `json:"name"`
	Role         string     `json:"role"`
	Scopes       []string   `json:"scopes"`
	Hint         string     `json:"hint"`
	CreatedAt    time.Time  `json:"created_at"`
	ExpiresAt    *time.Time `json:"expires_at"`
	LastUsedAt   *time.Time `json:"last_used_at"`
	RevokedAt    *time.Time `json:"revoked_at"`
	CreatedByKey *uuid.UUID `json:"created_by_key"`
}

func apiKeyView(k store.APIKey) apiKeyJSON {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return apiKeyJSON{ID: k.ID, Name: k.Name, Role: k.Role, Scopes: k.Scopes, Hint: k.Hint, CreatedAt: k.CreatedAt.UTC(),
		ExpiresAt: utc(k.ExpiresAt), LastUsedAt: utc(k.LastUsedAt), RevokedAt: utc(k.RevokedAt), CreatedByKey: k.CreatedByKey}
}

// Create makes a key; its secret is in this answer only. A key made with
// a key can do no more than it and is revoked with it.
func (h *Keys) Create(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in KeyInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	var maker *store.APIKey
	if k, ok := session.APIKeyFrom(r.Context()); ok {
		maker = &k
	}
	k, secret, err := h.core.Create(r.Context(), a.Org, a.User, in.Request(maker))
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

// Revoke revokes a key everywhere at once, with the keys it made and the
// webhook endpoints it registered.
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
