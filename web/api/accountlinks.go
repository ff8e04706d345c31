package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/auth"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

// AccountLinks are the accounts' emailed links: verification, password
// reset and invitations; *auth.Accounts satisfies it.
type AccountLinks interface {
	VerifyEmail(ctx context.Context, token string) (store.TokenUser, error)
	ResendVerification(ctx context.Context, org store.Org, user uuid.UUID) error
	EmailVerified(ctx context.Context, org, user uuid.UUID) (bool, error)
	RequestReset(ctx context.Context, orgSlug, email string) error
	ResetPassword(ctx context.Context, token, password, keep string) (store.TokenUser, []string, error)
	AcceptInvitation(ctx context.Context, token, password string) (store.TokenUser, error)
	Invited(ctx context.Context, token string) (store.Invitation, store.Org, error)
}

var _ AccountLinks = (*auth.Accounts)(nil)

type tokenInput struct {
	Token string `json:"token" validate:"required,max=100"`
}

type resetInput struct {
	Org   string `json:"org" validate:"required,max=40"`
	Email string `json:"email" validate:"required,max=254"`
}

type resetConfirmInput struct {
	Token    string `json:"token" validate:"required,max=100"`
	Password string `json:"password" validate:"required,max=200"`
}

// VerifyEmail spends a verification link's token (POST /verify-email,
// JSON or the link page's form): 200, or 404 for a token unknown, used or
// expired.
func (h *Accounts) VerifyEmail(w http.ResponseWriter, r *http.Request) error {
	var in tokenInput
	return h.spendLink(w, r, &in, func(v url.Values) { in = tokenInput{Token: v.Get("token")} },
		func(ctx context.Context) (store.TokenUser, error) { return h.auth.VerifyEmail(ctx, in.Token) },
		func(msg string) templ.Component {
			return views.VerifyEmail(h.pages.Meta(r, "Confirm your email"), views.TokenForm{Error: msg})
		},
		linkSpent{title: "Email confirmed", status: "verified", text: "Your email is confirmed: you can hold seats now."})
}

// AcceptInvitation spends an invitation's token (POST
// /invitations/accept, JSON or the link page's form): the invited address
// has a verified buyer account with the password given, or, if it had
// one already, that account is confirmed and its password kept — the
// answer is the same. 404 for a token unknown, used, revoked or expired;
// 422 for a password too short (the token stays good).
func (h *Accounts) AcceptInvitation(w http.ResponseWriter, r *http.Request) error {
	var in resetConfirmInput
	return h.spendLink(w, r, &in, func(v url.Values) { in = resetConfirmInput{Token: v.Get("token"), Password: v.Get("password")} },
		func(ctx context.Context) (store.TokenUser, error) {
			return h.auth.AcceptInvitation(ctx, in.Token, in.Password)
		},
		func(msg string) templ.Component {
			return views.AcceptInvitation(h.pages.Meta(r, "Accept the invitation"), views.InvitationForm{Token: in.Token, Error: msg})
		},
		linkSpent{title: "Invitation accepted", status: "accepted",
			text: "Your account is ready: sign in with your email and the password you chose (an account you had here already keeps its password)."})
}

// linkSpent is what a spent link's answer says: the notice page's title,
// the JSON status, and the sentence both show.
type linkSpent struct {
	title, status, text string
}

// spendLink answers a post that spends an emailed link's token (the
// verification and reset links), from JSON or the link page's form, at
// the sign-in rate: in is decoded (fromForm fills it from a form), spend
// spends it; a refused form shows again (again, with the error's
// sentence), a success shows done's notice with a link to sign in, or
// answers it as JSON.
func (h *Accounts) spendLink(w http.ResponseWriter, r *http.Request, in any, fromForm func(url.Values),
	spend func(ctx context.Context) (store.TokenUser, error), again func(msg string) templ.Component, done linkSpent) error {
	if err := h.limits.Login(r); err != nil {
		return err
	}
	isForm, err := h.dec.JSONOrForm(w, r, in, fromForm)
	if err != nil {
		return err
	}
	t, err := spend(r.Context())
	if err != nil {
		if isForm {
			return h.formFailed(w, r, err, again)
		}
		return err
	}
	if isForm {
		h.pages.Render(w, r, http.StatusOK, views.NoticePage(h.pages.Meta(r, done.title),
			views.Notice{Title: done.title, Text: done.text, Link: "/login?org=" + url.QueryEscape(t.Org.Slug), Label: "Sign in"}))
		return nil
	}
	httpx.WriteJSON(w, http.StatusOK, statusJSON{Status: done.status, Message: done.text})
	return nil
}

// ResendVerification mails the signed-in user a fresh verification link
// (202; nothing when they are verified already), at most a few a minute.
func (h *Accounts) ResendVerification(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var none struct{}
	if err := h.dec.OptionalJSON(w, r, &none); err != nil {
		return err
	}
	if err := h.limits.Mail(r.Context(), a.Org.String(), "user:"+a.User.String()); err != nil {
		return err
	}
	acct := h.sessions.Account(r.Context())
	org := store.Org{ID: a.Org, Slug: acct.OrgSlug, Name: acct.OrgName}
	if org.Name == "" {
		o, err := h.reads.OrgByID(r.Context(), a.Org)
		if err != nil {
			return err
		}
		org = o
	}
	if err := h.auth.ResendVerification(r.Context(), org, a.User); err != nil {
		return err
	}
	const sent = "If your address is not confirmed yet, a new link is on its way."
	if httpx.MediaType(r) == httpx.MediaForm {
		h.pages.Render(w, r, http.StatusOK, views.NoticePage(h.pages.Meta(r, "Check your inbox"),
			views.Notice{Title: "Check your inbox", Text: sent, Link: "/events", Label: "Back to events"}))
		return nil
	}
	httpx.WriteJSON(w, http.StatusAccepted, statusJSON{Status: "verification_sent", Message: sent})
	return nil
}

// RequestReset mails a password-reset link to the account of {org, email}
// if there is one: 202 whatever the address (auth.Accounts.RequestReset).
func (h *Accounts) RequestReset(w http.ResponseWriter, r *http.Request) error {
	if err := h.limits.Login(r); err != nil {
		return err
	}
	var in resetInput
	isForm, err := h.dec.JSONOrForm(w, r, &in, func(v url.Values) { in = resetInput{Org: v.Get("org"), Email: v.Get("email")} })
	if err != nil {
		return err
	}
	// Counted per organization and address whether or not it has an
	// account: the limit says nothing about which do.
	org, email := strings.ToLower(strings.TrimSpace(in.Org)), strings.ToLower(strings.TrimSpace(in.Email))
	if err := h.limits.Mail(r.Context(), org, email); err != nil {
		return err
	}
	if err := h.auth.RequestReset(r.Context(), org, email); err != nil {
		return err
	}
	const sent = "If that address has an account, a link to choose a new password is on its way. It works for one hour."
	if isForm {
		h.pages.Render(w, r, http.StatusOK, views.NoticePage(h.pages.Meta(r, "Check your inbox"),
			views.Notice{Title: "Check your inbox", Text: sent}))
		return nil
	}
	httpx.WriteJSON(w, http.StatusAccepted, statusJSON{Status: "reset_requested", Message: sent})
	return nil
}

// ConfirmReset sets a new password with a reset link's token: 200, 404
// for a token unknown, used or expired, 422 for a password too short
// (the token is then still good). Every other session of the account
// ends, on every process.
func (h *Accounts) ConfirmReset(w http.ResponseWriter, r *http.Request) error {
	var in resetConfirmInput
	return h.spendLink(w, r, &in, func(v url.Values) {
		in = resetConfirmInput{Token: v.Get("token"), Password: v.Get("password")}
	}, func(ctx context.Context) (store.TokenUser, error) {
		t, ended, err := h.auth.ResetPassword(ctx, in.Token, in.Password, h.sessions.StoredToken(ctx))
		if err == nil {
			h.sessions.Ended(ended)
		}
		return t, err
	}, func(msg string) templ.Component {
		return views.ResetConfirm(h.pages.Meta(r, "Choose a new password"), views.TokenForm{Token: in.Token, Error: msg})
	}, linkSpent{title: "Password changed", status: "password_changed",
		text: "Your password is changed, and every other device is signed out."})
}
