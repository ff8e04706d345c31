package pages

import (
	"context"
	"net/http"
	"strings"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/session"
)

// OrgReads finds an organization's storefront; *store.Accounts satisfies
// it.
type OrgReads interface {
	OrgBySlug(ctx context.Context, slug string) (store.Org, error)
}

// SignIn is the front door: the home redirect and the sign-in and sign-up
// forms (their posts are web/api's Accounts).
type SignIn struct {
	render Renderer
	orgs   OrgReads
}

// Home sends a signed-in user to the events (door staff to the scanner's
// events), anyone else to sign in.
func (p *SignIn) Home(w http.ResponseWriter, r *http.Request) {
	if a, ok := session.ActorFrom(r.Context()); ok {
		to := "/events"
		if a.Role == hold.RoleDoor {
			to = "/door"
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// Login is the sign-in form, with the organization of ?org= filled in.
func (p *SignIn) Login(w http.ResponseWriter, r *http.Request) {
	org := r.URL.Query().Get("org")
	if len(org) > 40 {
		org = ""
	}
	p.render.Render(w, r, http.StatusOK, views.Login(p.render.Meta(r, "Sign in"), views.LoginForm{Org: org}))
}

// Signup is an organization's sign-up form for buyers.
func (p *SignIn) Signup(w http.ResponseWriter, r *http.Request) {
	slug := strings.ToLower(r.PathValue("org"))
	org, err := p.orgs.OrgBySlug(r.Context(), slug)
	if err != nil || len(slug) > 40 {
		p.render.Error(w, r, apperr.E(apperr.NotFound, "no such organization"))
		return
	}
	p.render.Render(w, r, http.StatusOK, views.Signup(p.render.Meta(r, "Sign up"), views.SignupForm{OrgSlug: org.Slug, OrgName: org.Name}))
}
