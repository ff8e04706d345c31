package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/session"
)

type loginInput struct {
	Org      string `json:"org" validate:"required,max=40"`
	Email    string `json:"email" validate:"required,max=254"`
	Password string `json:"password" validate:"required,max=200"`
}

type signupInput struct {
	Email    string `json:"email" validate:"required,max=254"`
	Password string `json:"password" validate:"required,max=200"`
}

type userJSON struct {
	ID    uuid.UUID `json:"id"`
	Email string    `json:"email"`
	Role  hold.Role `json:"role"`
}

type orgJSON struct {
	ID   uuid.UUID `json:"id"`
	Slug string    `json:"slug"`
	Name string    `json:"name"`
}

type accountJSON struct {
	User userJSON `json:"user"`
	Org  orgJSON  `json:"org"`
}

// login signs a user in with organization, email and password, from JSON
// or a form. The organization named here is the one legitimate org input:
// no session exists yet.
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	if err := s.limits.Login(r); err != nil {
		return err
	}
	var in loginInput
	isForm, err := s.dec.JSONOrForm(w, r, &in, func(v url.Values) {
		in = loginInput{Org: v.Get("org"), Email: v.Get("email"), Password: v.Get("password")}
	})
	if err != nil {
		return err
	}
	// The account's lockout is checked before any password is hashed, and
	// holds whatever the password: a guess that happens to be right is
	// refused too while the account is locked.
	err = s.lockout.Check(r.Context(), in.Org, in.Email)
	var org store.Org
	var u store.User
	if err == nil {
		org, u, err = s.deps.Accounts.Authenticate(r.Context(), in.Org, in.Email, in.Password)
		switch {
		case err == nil:
			s.lockout.Succeeded(r.Context(), in.Org, in.Email)
		case apperr.CodeOf(err) == apperr.Unauthorized:
			s.lockout.Failed(r.Context(), in.Org, in.Email)
		}
	}
	if err != nil {
		if isForm {
			return s.formFailed(w, r, err, func(msg string) templ.Component {
				return views.Login(s.pages.Meta(r, "Sign in"), views.LoginForm{Org: in.Org, Email: in.Email, Error: msg})
			})
		}
		return err
	}
	return s.signedIn(w, r, isForm, http.StatusOK, org, u)
}

// formFailed answers a failed form post (a person in a browser) with the
// form again and the error's sentence; internal errors stay generic.
func (s *Server) formFailed(w http.ResponseWriter, r *http.Request, err error, page func(msg string) templ.Component) error {
	e, ok := httpx.DomainError(err)
	if !ok || e.Code == apperr.Internal {
		return err
	}
	s.pages.Render(w, r, httpx.Status(e.Code), page(e.Message))
	return nil
}

// signup creates a buyer account on an organization's storefront and
// signs it in.
func (s *Server) signup(w http.ResponseWriter, r *http.Request) error {
	if err := s.limits.Login(r); err != nil {
		return err
	}
	slug := strings.ToLower(r.PathValue("org"))
	if len(slug) > 40 {
		return apperr.E(apperr.NotFound, "organization not found")
	}
	var in signupInput
	isForm, err := s.dec.JSONOrForm(w, r, &in, func(v url.Values) {
		in = signupInput{Email: v.Get("email"), Password: v.Get("password")}
	})
	if err != nil {
		return err
	}
	org, err := s.deps.Store.Accounts.OrgBySlug(r.Context(), slug)
	if err != nil {
		return err
	}
	u, err := s.deps.Accounts.Create(r.Context(), org.ID, in.Email, in.Password, string(hold.RoleBuyer))
	if err != nil {
		if isForm {
			return s.formFailed(w, r, err, func(msg string) templ.Component {
				return views.Signup(s.pages.Meta(r, "Sign up"), views.SignupForm{OrgSlug: org.Slug, OrgName: org.Name, Email: in.Email, Error: msg})
			})
		}
		return err
	}
	return s.signedIn(w, r, isForm, http.StatusOK, org, u)
}

// signedIn starts a session for u with a fresh token (no fixation) and
// answers: a redirect for a form, the account for JSON.
func (s *Server) signedIn(w http.ResponseWriter, r *http.Request, isForm bool, status int, org store.Org, u store.User) error {
	ctx := r.Context()
	if err := s.sessions.SignIn(w, r, session.Account{Org: org.ID, OrgSlug: org.Slug, OrgName: org.Name,
		User: u.ID, Email: u.Email, Role: hold.Role(u.Role)}); err != nil {
		return err
	}
	// The account may have been disabled or given another role between
	// the password check and the save, after its sessions were deleted:
	// this one must not survive that.
	if ok, err := s.deps.Accounts.Current(ctx, org.ID, u.ID, u.Role); err != nil || !ok {
		if err == nil {
			err = apperr.E(apperr.Unauthorized, "this account changed while signing in; please sign in again")
		}
		// Signing out deletes the session from the store; the cookie
		// already sent names nothing then.
		_ = s.sessions.SignOut(w, r)
		return err
	}
	httpx.NoteOrg(ctx, org.ID)
	if isForm {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	httpx.WriteJSON(w, status, accountJSON{
		User: userJSON{ID: u.ID, Email: u.Email, Role: hold.Role(u.Role)},
		Org:  orgJSON{ID: org.ID, Slug: org.Slug, Name: org.Name},
	})
	return nil
}

// logout ends the session everywhere, its live sockets with it
// (session.SignOut).
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.sessions.SignOut(w, r); err != nil {
		return err
	}
	if httpx.MediaType(r) == httpx.MediaForm {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// me answers who the session belongs to.
func (s *Server) me(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ctx := r.Context()
	if _, ok := session.APIKeyFrom(ctx); ok {
		// An API key has no session to read the names from.
		org, err := s.deps.Store.Accounts.OrgByID(ctx, a.Org)
		if err != nil {
			return err
		}
		u, err := s.deps.Store.Accounts.UserByID(ctx, a.Org, a.User)
		if err != nil {
			return err
		}
		httpx.WriteJSON(w, http.StatusOK, accountJSON{
			User: userJSON{ID: a.User, Email: u.Email, Role: a.Role},
			Org:  orgJSON{ID: a.Org, Slug: org.Slug, Name: org.Name},
		})
		return nil
	}
	acct := s.sessions.Account(ctx)
	httpx.WriteJSON(w, http.StatusOK, accountJSON{
		User: userJSON{ID: a.User, Email: acct.Email, Role: a.Role},
		Org:  orgJSON{ID: a.Org, Slug: acct.OrgSlug, Name: acct.OrgName},
	})
	return nil
}
