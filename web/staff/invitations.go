package staff

import (
	"net/http"

	"seatd/internal/hold"
	"seatd/views"
	"seatd/web/api"
	"seatd/web/httpx"
)

// Invitations is the organizer's invitations page; it makes the API's
// calls (api.Invitations).
type Invitations struct {
	*frame
	core   api.Inviter
	orgs   api.AccountReads
	limits api.LoginLimit
}

// Page lists the organization's invitations with the form for a new one.
func (p *Invitations) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	o, err := p.orgs.OrgByID(r.Context(), a.Org)
	if err != nil {
		return err
	}
	list, err := p.core.Invitations(r.Context(), a.Org)
	if err != nil {
		return err
	}
	rows := make([]views.InvitationRow, len(list))
	for i, inv := range list {
		rows[i] = views.InvitationRow{ID: inv.ID.String(), Email: inv.Email, Status: inv.Status, CreatedAt: inv.CreatedAt,
			ExpiresAt: inv.ExpiresAt}
	}
	p.render.Render(w, r, http.StatusOK, views.Invitations(p.render.Meta(r, "Invitations"), o.SignupPolicy, rows))
	return nil
}

// Invite mails an invitation to the form's address.
func (p *Invitations) Invite(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	inv, err := api.SendInvitation(r.Context(), p.core, p.orgs, p.limits, a, f.Get("email"))
	if err != nil {
		return err
	}
	return p.backWith(w, r, "/admin/invitations", "Invitation mailed to "+inv.Email+".")
}

// Revoke withdraws a pending invitation.
func (p *Invitations) Revoke(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "invitation")
	if err != nil {
		return err
	}
	if err := p.core.RevokeInvitation(r.Context(), a.Org, id); err != nil {
		return err
	}
	return p.backWith(w, r, "/admin/invitations", "Invitation revoked: its link works no more.")
}
