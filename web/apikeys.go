package web

import (
	"net/http"

	"seatd/internal/hold"
	"seatd/views"
	"seatd/web/api"
	"seatd/web/httpx"
)

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
	s.render.Render(w, r, status, views.APIKeysPage(s.render.Meta(r, "API keys"), v))
	return nil
}

// createAPIKeyForm makes a key and shows its secret in this answer only
// (never in a redirect, a flash or a log).
func (s *Server) createAPIKeyForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	in := api.KeyInput{Name: f.Get("name"), Role: f.Get("role")}
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
