package staff

import (
	"net/http"
	"time"

	"seatd/internal/apperr"
	"seatd/internal/auth"
	"seatd/internal/hold"
	"seatd/views"
	"seatd/web/api"
	"seatd/web/httpx"
)

// Keys is the organizer's API keys page; it makes the API's calls.
type Keys struct {
	*frame
	dec  *httpx.Decoder
	core api.KeyCore
	list api.KeyList
}

// Page lists the organization's keys with the form for a new one.
func (p *Keys) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return p.show(w, r, a, http.StatusOK, views.APIKeys{})
}

func (p *Keys) show(w http.ResponseWriter, r *http.Request, a hold.Actor, status int, v views.APIKeys) error {
	keys, err := p.list.APIKeys(r.Context(), a.Org)
	if err != nil {
		return err
	}
	v.Scopes = auth.RoleScopes("organizer")
	for _, k := range keys {
		v.Keys = append(v.Keys, views.APIKey{ID: k.ID.String(), Name: k.Name, Role: k.Role, Hint: k.Hint,
			CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt,
			Scopes: k.Scopes, ExpiresAt: k.ExpiresAt, ByKey: k.CreatedByKey != nil})
	}
	p.render.Render(w, r, status, views.APIKeysPage(p.render.Meta(r, "API keys"), v))
	return nil
}

// Create makes a key and shows its secret in this answer only (never in
// a redirect, a flash or a log). The form is checked as the API's body
// is: scopes ticked limit the key (none: all its role allows), and the
// expiry, a date and time in UTC as the page shows times, ends it.
func (p *Keys) Create(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	in := api.KeyInput{Name: f.Get("name"), Role: f.Get("role"), Scopes: f["scopes"]}
	if v := f.Get("expires_at"); v != "" {
		t, err := parseExpiry(v)
		if err != nil {
			return &apperr.Error{Code: apperr.Invalid, Message: "the expiry is not a date and time (YYYY-MM-DDThh:mm, UTC)",
				Fields: map[string]string{"expires_at": "must be a date and time"}}
		}
		in.ExpiresAt = &t
	}
	if err := p.dec.Validate(&in); err != nil {
		return err
	}
	k, secret, err := p.core.Create(r.Context(), a.Org, a.User, in.Request(nil))
	if err != nil {
		return err
	}
	return p.show(w, r, a, http.StatusCreated, views.APIKeys{NewKey: secret, NewName: k.Name})
}

// parseExpiry reads a datetime-local field's value, in UTC: minutes, or
// seconds where the browser sends them.
func parseExpiry(v string) (time.Time, error) {
	t, err := time.ParseInLocation("2006-01-02T15:04", v, time.UTC)
	if err != nil {
		return time.ParseInLocation("2006-01-02T15:04:05", v, time.UTC)
	}
	return t, nil
}

// Revoke revokes a key everywhere at once.
func (p *Keys) Revoke(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "key")
	if err != nil {
		return err
	}
	k, err := p.core.Revoke(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	return p.backWith(w, r, "/admin/api-keys", "Key “"+k.Name+"” revoked; it is refused everywhere now.")
}
