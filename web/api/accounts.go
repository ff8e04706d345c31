package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/auth"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/session"
)

// Authenticator is what sign-in, sign-up and the session check ask of the
// accounts; *auth.Accounts satisfies it.
type Authenticator interface {
	Authenticate(ctx context.Context, orgSlug, email, password string) (store.Org, store.User, error)
	Signup(ctx context.Context, org store.Org, email, password string) error
	Current(ctx context.Context, org, user uuid.UUID, role string) (bool, error)
	AccountLinks
	SignupPolicySetter
	Inviter
}

var _ Authenticator = (*auth.Accounts)(nil)

// AccountReads are the names an account's answers show; *store.Accounts
// satisfies it.
type AccountReads interface {
	OrgBySlug(ctx context.Context, slug string) (store.Org, error)
	OrgByID(ctx context.Context, id uuid.UUID) (store.Org, error)
	UserByID(ctx context.Context, org, id uuid.UUID) (store.User, error)
}

// SessionKeeper starts, ends and reads sessions; *session.Sessions
// satisfies it.
type SessionKeeper interface {
	SignIn(w http.ResponseWriter, r *http.Request, acct session.Account) error
	SignOut(w http.ResponseWriter, r *http.Request) error
	Account(ctx context.Context) session.Account
	StoredToken(ctx context.Context) string
	Ended(tokens []string)
}

// LoginLimit counts sign-in attempts per client, sign-ups and new
// sessions per client network, and mails sent per address;
// *ratelimit.Limiter satisfies it.
type LoginLimit interface {
	Login(r *http.Request) error
	Signup(r *http.Request) error
	NewSession(r *http.Request) error
	Mail(ctx context.Context, org, subject string) error
}

// Lockout locks an account's untrusted attempts, or one device's, out
// after repeated wrong passwords; *ratelimit.Lockout satisfies it.
type Lockout interface {
	Check(ctx context.Context, org, email, device string) error
	Failed(ctx context.Context, org, email, device string)
	Succeeded(ctx context.Context, org, email, device string)
}

// KnownDevices are the device cookies of browsers that signed in
// before; *ratelimit.DeviceCookies satisfies it.
type KnownDevices interface {
	Trusted(r *http.Request, org, email string) string
	Issue(w http.ResponseWriter, org, email string)
}

// FormPages shows the sign-in and sign-up forms again, for a form post
// that failed; *render.Pages satisfies it.
type FormPages interface {
	Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component)
	Meta(r *http.Request, title string) views.Page
}

// Accounts signs people in and out (from JSON or a form), signs buyers
// up, and says who a session or API key belongs to.
type Accounts struct {
	dec      *httpx.Decoder
	limits   LoginLimit
	lockout  Lockout
	devices  KnownDevices
	auth     Authenticator
	reads    AccountReads
	sessions SessionKeeper
	pages    FormPages
}

type loginInput struct {
	Org      string `json:"org" validate:"required,max=40"`
	Email    string `json:"email" validate:"required,max=254"`
	Password string `json:"password" validate:"required,max=200"`
	// Remember: "keep me signed in" (30 days, under a persistent
	// cookie); without it the cookie ends with the browser.
	Remember bool `json:"remember"`
}

type signupInput struct {
	Email    string `json:"email" validate:"required,max=254"`
	Password string `json:"password" validate:"required,max=200"`
}

type userJSON struct {
	ID    uuid.UUID `json:"id"`
	Email string    `json:"email"`
	Role  hold.Role `json:"role"`
	// EmailVerified is set on a session's answers (sign-in, me): a buyer
	// holds only once it is true.
	EmailVerified *bool `json:"email_verified,omitempty"`
}

type orgJSON struct {
	ID   uuid.UUID `json:"id"`
	Slug string    `json:"slug"`
	Name string    `json:"name"`
}

// AccountJSON is who a session or key belongs to: the answer of sign-in,
// sign-up and GET /api/v1/me.
type AccountJSON struct {
	User userJSON `json:"user"`
	Org  orgJSON  `json:"org"`
}

// Login signs a user in with organization, email and password, from JSON
// or a form. The organization named here is the one legitimate org input:
// no session exists yet.
func (h *Accounts) Login(w http.ResponseWriter, r *http.Request) error {
	if err := h.limits.Login(r); err != nil {
		return err
	}
	var in loginInput
	isForm, err := h.dec.JSONOrForm(w, r, &in, func(v url.Values) {
		in = loginInput{Org: v.Get("org"), Email: v.Get("email"), Password: v.Get("password"), Remember: v.Get("remember") != ""}
	})
	if err != nil {
		return err
	}
	// The account's lockout is checked before any password is hashed, and
	// holds whatever the password: a guess that happens to be right is
	// refused too while the account is locked. A browser that signed in
	// to the account before is counted apart (its device cookie), so a
	// stranger's failures never lock the owner out of it.
	device := h.devices.Trusted(r, in.Org, in.Email)
	err = h.lockout.Check(r.Context(), in.Org, in.Email, device)
	var org store.Org
	var u store.User
	if err == nil {
		org, u, err = h.auth.Authenticate(r.Context(), in.Org, in.Email, in.Password)
		switch {
		case err == nil:
			h.lockout.Succeeded(r.Context(), in.Org, in.Email, device)
			// The password was right; a session begins only within the
			// network's limit of new sessions.
			err = h.limits.NewSession(r)
		case apperr.CodeOf(err) == apperr.Unauthorized:
			h.lockout.Failed(r.Context(), in.Org, in.Email, device)
		}
	}
	if err != nil {
		if isForm {
			return h.formFailed(w, r, err, func(msg string) templ.Component {
				return views.Login(h.pages.Meta(r, "Sign in"), views.LoginForm{Org: in.Org, Email: in.Email, Error: msg, Remember: in.Remember})
			})
		}
		return err
	}
	return h.signedIn(w, r, isForm, http.StatusOK, org, u, in.Remember)
}

// formFailed answers a failed form post (a person in a browser) with the
// form again and the error's sentence; internal errors stay generic.
func (h *Accounts) formFailed(w http.ResponseWriter, r *http.Request, err error, page func(msg string) templ.Component) error {
	e, ok := httpx.DomainError(err)
	if !ok || e.Code == apperr.Internal {
		return err
	}
	h.pages.Render(w, r, httpx.Status(e.Code), page(e.Message))
	return nil
}

// Signup signs a buyer up on an organization's storefront: 202, and a
// mail to the address — a verification link, or, when the address has a
// verified account already, a notice of the attempt — whichever it is
// (auth.Accounts.Signup), so the answer tells nobody which addresses have
// accounts. Nobody is signed in: the buyer signs in with their password
// (and can hold once the link is followed). 403 signup_closed when the
// organization takes no sign-ups.
func (h *Accounts) Signup(w http.ResponseWriter, r *http.Request) error {
	if err := h.limits.Signup(r); err != nil {
		return err
	}
	slug := strings.ToLower(r.PathValue("org"))
	if len(slug) > 40 {
		return apperr.E(apperr.NotFound, "organization not found")
	}
	var in signupInput
	isForm, err := h.dec.JSONOrForm(w, r, &in, func(v url.Values) {
		in = signupInput{Email: v.Get("email"), Password: v.Get("password")}
	})
	if err != nil {
		return err
	}
	org, err := h.reads.OrgBySlug(r.Context(), slug)
	if err == nil {
		err = h.limits.Mail(r.Context(), org.ID.String(), strings.ToLower(strings.TrimSpace(in.Email)))
	}
	if err == nil {
		err = h.auth.Signup(r.Context(), org, in.Email, in.Password)
	}
	if err != nil {
		if isForm && org.ID != uuid.Nil {
			return h.formFailed(w, r, err, func(msg string) templ.Component {
				return views.Signup(h.pages.Meta(r, "Sign up"), views.SignupForm{OrgSlug: org.Slug, OrgName: org.Name, Email: in.Email, Error: msg})
			})
		}
		return err
	}
	const sent = "We mailed you a link: follow it to confirm your address, then sign in."
	if isForm {
		h.pages.Render(w, r, http.StatusOK, views.NoticePage(h.pages.Meta(r, "Check your inbox"),
			views.Notice{Title: "Check your inbox", Text: sent, Link: "/login?org=" + url.QueryEscape(org.Slug), Label: "Sign in"}))
		return nil
	}
	httpx.WriteJSON(w, http.StatusAccepted, statusJSON{Status: "verification_sent", Message: sent})
	return nil
}

// statusJSON is the answer of a request whose effect is a mail or a
// change of state with nothing else to show.
type statusJSON struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// signedIn starts a session for u with a fresh token (no fixation) and
// answers: a redirect for a form, the account for JSON.
func (h *Accounts) signedIn(w http.ResponseWriter, r *http.Request, isForm bool, status int, org store.Org, u store.User, remember bool) error {
	ctx := r.Context()
	if err := h.sessions.SignIn(w, r, session.Account{Org: org.ID, OrgSlug: org.Slug, OrgName: org.Name,
		User: u.ID, Email: u.Email, Role: hold.Role(u.Role), Verified: u.Verified, Remember: remember,
		CreatedAt: u.CreatedAt}); err != nil {
		return err
	}
	// The account may have been disabled or given another role between
	// the password check and the save, after its sessions were deleted:
	// this one must not survive that.
	if ok, err := h.auth.Current(ctx, org.ID, u.ID, u.Role); err != nil || !ok {
		if err == nil {
			err = apperr.E(apperr.Unauthorized, "this account changed while signing in; please sign in again")
		}
		// Signing out deletes the session from the store; the cookie
		// already sent names nothing then.
		_ = h.sessions.SignOut(w, r)
		return err
	}
	// This browser now knows the account: its later sign-ins are counted
	// apart from strangers' (the lockout's device cookies).
	h.devices.Issue(w, org.Slug, u.Email)
	httpx.NoteOrg(ctx, org.ID)
	if isForm {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	httpx.WriteJSON(w, status, AccountJSON{
		User: userJSON{ID: u.ID, Email: u.Email, Role: hold.Role(u.Role), EmailVerified: &u.Verified},
		Org:  orgJSON{ID: org.ID, Slug: org.Slug, Name: org.Name},
	})
	return nil
}

// Logout ends the session everywhere, its live sockets with it
// (session.SignOut).
func (h *Accounts) Logout(w http.ResponseWriter, r *http.Request) error {
	if err := h.sessions.SignOut(w, r); err != nil {
		return err
	}
	if httpx.MediaType(r) == httpx.MediaForm {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Me answers who the session or API key belongs to.
func (h *Accounts) Me(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ctx := r.Context()
	if _, ok := session.APIKeyFrom(ctx); ok {
		// An API key has no session to read the names from.
		org, err := h.reads.OrgByID(ctx, a.Org)
		if err != nil {
			return err
		}
		u, err := h.reads.UserByID(ctx, a.Org, a.User)
		if err != nil {
			return err
		}
		httpx.WriteJSON(w, http.StatusOK, AccountJSON{
			User: userJSON{ID: a.User, Email: u.Email, Role: a.Role},
			Org:  orgJSON{ID: a.Org, Slug: org.Slug, Name: org.Name},
		})
		return nil
	}
	acct := h.sessions.Account(ctx)
	verified, err := h.auth.EmailVerified(ctx, a.Org, a.User)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, AccountJSON{
		User: userJSON{ID: a.User, Email: acct.Email, Role: a.Role, EmailVerified: &verified},
		Org:  orgJSON{ID: a.Org, Slug: acct.OrgSlug, Name: acct.OrgName},
	})
	return nil
}
