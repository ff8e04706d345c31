package pages

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/session"
)

// AccountSessions lists and ends a user's sessions; *session.Sessions
// satisfies it.
type AccountSessions interface {
	Devices(ctx context.Context, a hold.Actor) ([]session.Device, error)
	EndDevice(ctx context.Context, a hold.Actor, id uuid.UUID) error
	EndOthers(ctx context.Context, a hold.Actor) (int, error)
	MayHold(ctx context.Context, a hold.Actor) error
	Flash(ctx context.Context, msg string)
}

// InvitationReads reads the pending invitation of a link's token without
// spending it; *auth.Accounts satisfies it.
type InvitationReads interface {
	Invited(ctx context.Context, token string) (store.Invitation, store.Org, error)
}

// Account is the pages of one's account: the pages emailed links open
// (their forms post to web/api's Accounts), the forgotten-password form,
// and the devices page.
type Account struct {
	render   Renderer
	sessions AccountSessions
	invites  InvitationReads
}

// tokenOf reads an emailed link's token from its query, bounded.
func tokenOf(r *http.Request) string {
	t := r.URL.Query().Get("token")
	if len(t) > 100 {
		return ""
	}
	return t
}

// VerifyEmail is the page a verification link opens: a button that
// posts the token. The GET itself verifies nothing (mail scanners fetch
// links).
func (p *Account) VerifyEmail(w http.ResponseWriter, r *http.Request) {
	p.render.Render(w, r, http.StatusOK, views.VerifyEmail(p.render.Meta(r, "Confirm your email"), views.TokenForm{Token: tokenOf(r)}))
}

// ResetRequest is the forgotten-password form.
func (p *Account) ResetRequest(w http.ResponseWriter, r *http.Request) {
	org := r.URL.Query().Get("org")
	if len(org) > 40 {
		org = ""
	}
	p.render.Render(w, r, http.StatusOK, views.ResetRequest(p.render.Meta(r, "Reset your password"), views.ResetRequestForm{Org: org}))
}

// ResetConfirm is the page a reset link opens: the new password's form.
func (p *Account) ResetConfirm(w http.ResponseWriter, r *http.Request) {
	p.render.Render(w, r, http.StatusOK, views.ResetConfirm(p.render.Meta(r, "Choose a new password"), views.TokenForm{Token: tokenOf(r)}))
}

// Invitation is the page an invitation's link opens: who is invited
// where, and the password form that posts the token. The GET spends
// nothing; a link no longer pending says so (404).
func (p *Account) Invitation(w http.ResponseWriter, r *http.Request) {
	meta := p.render.Meta(r, "Accept the invitation")
	inv, org, err := p.invites.Invited(r.Context(), tokenOf(r))
	if err != nil {
		e, ok := httpx.DomainError(err)
		if !ok || e.Code != apperr.NotFound {
			p.render.Error(w, r, err)
			return
		}
		p.render.Render(w, r, http.StatusNotFound, views.NoticePage(meta, views.Notice{Title: "This invitation is not valid", Text: e.Message}))
		return
	}
	p.render.Render(w, r, http.StatusOK, views.AcceptInvitation(meta, views.InvitationForm{Token: tokenOf(r), OrgName: org.Name, Email: inv.Email}))
}

// Devices lists the user's signed-in sessions.
func (p *Account) Devices(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ds, err := p.sessions.Devices(r.Context(), a)
	if err != nil {
		return err
	}
	rows := make([]views.DeviceRow, len(ds))
	for i, d := range ds {
		rows[i] = views.DeviceRow{ID: d.ID.String(), Device: d.Device.Device, IP: d.IP, Created: d.CreatedAt,
			LastSeen: d.LastSeenAt, Current: d.Current}
	}
	verified := p.sessions.MayHold(r.Context(), a) == nil
	p.render.Render(w, r, http.StatusOK, views.Devices(p.render.Meta(r, "Your devices"), rows, verified))
	return nil
}

// EndDevice signs one of the user's other sessions out, and shows the
// devices again.
func (p *Account) EndDevice(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	if err := p.sessions.EndDevice(r.Context(), a, id); err != nil {
		return err
	}
	p.sessions.Flash(r.Context(), "That device is signed out.")
	http.Redirect(w, r, "/me/devices", http.StatusSeeOther)
	return nil
}

// EndOthers signs out every session of the user but this one.
func (p *Account) EndOthers(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	if _, err := p.sessions.EndOthers(r.Context(), a); err != nil {
		return err
	}
	p.sessions.Flash(r.Context(), "Every other device is signed out.")
	http.Redirect(w, r, "/me/devices", http.StatusSeeOther)
	return nil
}
