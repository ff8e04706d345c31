package web

import (
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

// API keys over JSON and the organizer's page; the actor of a request made
// with a key is session.Load's.

type apiKeyInput struct {
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

// createAPIKey makes a key; its secret is in this answer only.
func (s *Server) createAPIKey(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in apiKeyInput
	if err := s.dec.JSON(w, r, &in); err != nil {
		return err
	}
	k, secret, err := s.keys.Create(r.Context(), a.Org, a.User, in.Name, in.Role)
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

func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return httpx.List(w, "api_keys", apiKeyView)(s.deps.Store.Accounts.APIKeys(r.Context(), a.Org))
}

// revokeAPIKey revokes a key everywhere at once.
func (s *Server) revokeAPIKey(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "key")
	if err != nil {
		return err
	}
	k, err := s.keys.Revoke(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiKeyView(k))
	return nil
}

// The organizer's API keys page.

func (s *Server) apiKeysPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return s.renderAPIKeys(w, r, a, http.StatusOK, views.APIKeys{})
}

func (s *Server) renderAPIKeys(w http.ResponseWriter, r *http.Request, a hold.Actor, status int, v views.APIKeys) error {
	keys, err := s.deps.Store.Accounts.APIKeys(r.Context(), a.Org)
	if err != nil {
		return err
	}
	for _, k := range keys {
		v.Keys = append(v.Keys, views.APIKey{ID: k.ID.String(), Name: k.Name, Role: k.Role, Hint: k.Hint,
			CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt})
	}
	s.pages.Render(w, r, status, views.APIKeysPage(s.pages.Meta(r, "API keys"), v))
	return nil
}

// createAPIKeyForm makes a key and shows its secret in this answer only
// (never in a redirect, a flash or a log).
func (s *Server) createAPIKeyForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	in := apiKeyInput{Name: f.Get("name"), Role: f.Get("role")}
	if err := s.dec.Validate(&in); err != nil {
		return err
	}
	k, secret, err := s.keys.Create(r.Context(), a.Org, a.User, in.Name, in.Role)
	if err != nil {
		return err
	}
	return s.renderAPIKeys(w, r, a, http.StatusCreated, views.APIKeys{NewKey: secret, NewName: k.Name})
}

func (s *Server) revokeAPIKeyForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "key")
	if err != nil {
		return err
	}
	k, err := s.keys.Revoke(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	s.sessions.Flash(r.Context(), "Key “"+k.Name+"” revoked; it is refused everywhere now.")
	http.Redirect(w, r, "/admin/api-keys", http.StatusSeeOther)
	return nil
}
