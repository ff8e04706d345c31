package session

import (
	"net/http"
	"slices"

	"seatd/internal/apperr"
	"seatd/internal/auth"
	"seatd/internal/hold"
	"seatd/web/httpx"
)

// Roles is a set of roles a route lets through (docs/architecture.md#roles-and-tenancy).
type Roles uint8

// The roles, and the sets routes use.
const (
	Buyer Roles = 1 << iota
	BoxOffice
	Organizer
	Door

	Staff   = BoxOffice | Organizer
	AnyRole = Buyer | Staff
	// Scanners admit tickets at the door: door staff, and the box office
	// and organizers who may stand in for them.
	Scanners = Door | Staff

	noRole   = Roles(0)
	roleMask = AnyRole | Door
)

func roleBit(role hold.Role) Roles {
	switch role {
	case hold.RoleBuyer:
		return Buyer
	case hold.RoleBoxOffice:
		return BoxOffice
	case hold.RoleOrganizer:
		return Organizer
	case hold.RoleDoor:
		return Door
	}
	return noRole
}

// Handler handles a request of a signed-in user; the actor comes from the
// session or the API key (ActorFrom), never from the request.
type Handler func(w http.ResponseWriter, r *http.Request, a hold.Actor) error

// Guards wrap handlers in the role check of their route and answer what
// they return: JSON errors for the API, error pages for pages.
type Guards struct {
	// Errors answers the API's refusals and errors as JSON.
	Errors *httpx.Errors
	// RenderError shows a page's refusal or error as an error page.
	RenderError func(w http.ResponseWriter, r *http.Request, err error)
}

// Authed lets through signed-in users whose role is in allowed: 401
// without a session, 403 with another role.
func (g Guards) Authed(allowed Roles, h Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, ok := ActorFrom(r.Context())
		if !ok {
			g.Errors.Write(w, r, apperr.E(apperr.Unauthorized, "sign in first"))
			return
		}
		if roleBit(a.Role)&allowed&roleMask == 0 {
			g.Errors.Write(w, r, apperr.E(apperr.Forbidden, "your account cannot do this"))
			return
		}
		if err := keyScope(r, allowed); err != nil {
			g.Errors.Write(w, r, err)
			return
		}
		if err := h(w, r, a); err != nil {
			g.Errors.Write(w, r, err)
		}
	}
}

// Page is Authed for HTML: without a session it redirects to sign-in,
// and errors render as an error page with the right status.
func (g Guards) Page(allowed Roles, h Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, ok := ActorFrom(r.Context())
		if !ok {
			if r.Header.Get("HX-Request") == "true" {
				w.Header().Set("HX-Redirect", "/login")
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if roleBit(a.Role)&allowed&roleMask == 0 {
			g.RenderError(w, r, apperr.E(apperr.Forbidden, "your account cannot open this page"))
			return
		}
		if err := keyScope(r, allowed); err != nil {
			g.RenderError(w, r, err)
			return
		}
		if err := h(w, r, a); err != nil {
			g.RenderError(w, r, err)
		}
	}
}

// RouteScope is the scope an API key needs for a route that lets allowed
// through with method: reading (GET, HEAD) is read; a write that buyers
// may make is holds; one that box office or door staff may make is
// box_office; one only organizers may make is admin (events, charts,
// the registry, keys and webhooks).
func RouteScope(method string, allowed Roles) string {
	switch {
	case method == http.MethodGet || method == http.MethodHead:
		return auth.ScopeRead
	case allowed&Buyer != 0:
		return auth.ScopeHolds
	case allowed&(BoxOffice|Door) != 0:
		return auth.ScopeBoxOffice
	}
	return auth.ScopeAdmin
}

// keyScope refuses (403) a request made with an API key whose scopes lack
// the route's (RouteScope); a session's request passes.
func keyScope(r *http.Request, allowed Roles) error {
	k, ok := APIKeyFrom(r.Context())
	if !ok {
		return nil
	}
	if need := RouteScope(r.Method, allowed); !slices.Contains(k.Scopes, need) {
		return &apperr.Error{Code: apperr.Forbidden, Message: "the API key's scopes do not cover this request",
			Fields: map[string]string{"scope": "needs " + need}}
	}
	return nil
}

// Public handles a request that needs no session, answering its error as
// JSON.
func (g Guards) Public(h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			g.Errors.Write(w, r, err)
		}
	}
}
