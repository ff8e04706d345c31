package web

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/seatlock"
	"seatd/internal/store"
	"seatd/views"
)

// API keys: organizers create keys; a request under /api/ with
// "Authorization: Bearer <key>" acts with the key's organization and role,
// exactly as a session would. Such a request carries no ambient browser
// credential (a browser never adds the header by itself, and a
// cross-origin page cannot without a preflight this server never
// approves), so it needs no cross-site protection; in exchange it never
// looks at the session cookie.

type apiKeyCtx struct{}

// bearerKey returns the API key of a request under /api/, if it has one.
func bearerKey(r *http.Request) (string, bool) {
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		return "", false
	}
	h := r.Header.Get("Authorization")
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(key), true
}

// keyFrom returns the API key a request authenticated with.
func keyFrom(ctx context.Context) (store.APIKey, bool) {
	k, ok := ctx.Value(apiKeyCtx{}).(store.APIKey)
	return k, ok
}

// withAPIKey authenticates a bearer request: 401 for a key that is not
// valid, 429 past the key's rate limit. The session is loaded empty (so
// handlers that read it see nothing) and never saved.
func (s *Server) withAPIKey(w http.ResponseWriter, r *http.Request, secret string, next http.Handler) {
	key, err := s.keys.Authenticate(r.Context(), secret)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="seatd"`)
		s.writeError(w, r, err)
		return
	}
	if err := s.limits.allowKey(r.Context(), key, s.deps.Cfg.APIKeyRatePerMinute); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, err := s.sessions.Load(r.Context(), "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a := hold.Actor{Org: key.OrgID, User: key.CreatedBy, Role: hold.Role(key.Role)}
	ctx = context.WithValue(ctx, actorKey{}, a)
	ctx = context.WithValue(ctx, apiKeyCtx{}, key)
	if info := infoOf(ctx); info != nil {
		info.org = a.Org
	}
	next.ServeHTTP(w, r.WithContext(ctx))
}

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
	if err := s.dec.json(w, r, &in); err != nil {
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
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	keys, err := s.deps.Store.Accounts.APIKeys(r.Context(), a.Org)
	if err != nil {
		return err
	}
	out := make([]apiKeyJSON, len(keys))
	for i, k := range keys {
		out[i] = apiKeyView(k)
	}
	writeJSON(w, http.StatusOK, map[string]any{"api_keys": out})
	return nil
}

// revokeAPIKey revokes a key everywhere at once.
func (s *Server) revokeAPIKey(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := pathID(r, "key")
	if err != nil {
		return err
	}
	k, err := s.keys.Revoke(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiKeyView(k))
	return nil
}

// allowKey counts a request made with an API key (per key).
func (l *limiter) allowKey(ctx context.Context, k store.APIKey, limit int) error {
	return l.allow(ctx, "api_key", limit, func(minute int64) string {
		return seatlock.RateKey(l.prefix, k.OrgID, "key:"+k.ID.String(), minute)
	})
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
	s.render(w, r, status, views.APIKeysPage(s.pageMeta(r, "API keys"), v))
	return nil
}

// createAPIKeyForm makes a key and shows its secret in this answer only
// (never in a redirect, a flash or a log).
func (s *Server) createAPIKeyForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := form(w, r)
	if err != nil {
		return err
	}
	in := apiKeyInput{Name: f.Get("name"), Role: f.Get("role")}
	if err := s.dec.validate(&in); err != nil {
		return err
	}
	k, secret, err := s.keys.Create(r.Context(), a.Org, a.User, in.Name, in.Role)
	if err != nil {
		return err
	}
	return s.renderAPIKeys(w, r, a, http.StatusCreated, views.APIKeys{NewKey: secret, NewName: k.Name})
}

func (s *Server) revokeAPIKeyForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := pathID(r, "key")
	if err != nil {
		return err
	}
	k, err := s.keys.Revoke(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	s.sessions.Put(r.Context(), sessFlash, "Key “"+k.Name+"” revoked; it is refused everywhere now.")
	http.Redirect(w, r, "/admin/api-keys", http.StatusSeeOther)
	return nil
}
