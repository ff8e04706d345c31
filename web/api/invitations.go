package api

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/auth"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// Inviter invites addresses to an organization and lists and revokes its
// invitations; *auth.Accounts satisfies it.
type Inviter interface {
	Invite(ctx context.Context, org store.Org, by uuid.UUID, email string) (store.Invitation, error)
	Invitations(ctx context.Context, org uuid.UUID) ([]store.Invitation, error)
	RevokeInvitation(ctx context.Context, org, id uuid.UUID) error
}

var _ Inviter = (*auth.Accounts)(nil)

// Invitations are the organization's invitations (docs/api.md#invitations):
// its organizers invite an address by mail, list the invitations and
// revoke pending ones.
type Invitations struct {
	dec    *httpx.Decoder
	core   Inviter
	reads  AccountReads
	limits LoginLimit
}

// InvitationInput is an invitation to make, from JSON or the staff
// page's form.
type InvitationInput struct {
	Email string `json:"email" validate:"required,max=254"`
}

// InvitationJSON is an invitation. Status is pending, accepted, expired
// or revoked.
type InvitationJSON struct {
	ID         uuid.UUID  `json:"id"`
	Email      string     `json:"email"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	AcceptedAt *time.Time `json:"accepted_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func invitationJSON(i store.Invitation) InvitationJSON {
	return InvitationJSON{ID: i.ID, Email: i.Email, Status: i.Status, CreatedAt: i.CreatedAt.UTC(), ExpiresAt: i.ExpiresAt.UTC(),
		AcceptedAt: i.AcceptedAt, RevokedAt: i.RevokedAt}
}

// Invite invites an address (201, the invitation): the mail with its
// link is on its way. The answer is the same whether or not the address
// has an account. 409 past the quota of pending invitations; 429 past
// the mails per address allowed a minute.
func (h *Invitations) Invite(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in InvitationInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	inv, err := SendInvitation(r.Context(), h.core, h.reads, h.limits, a, in.Email)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, invitationJSON(inv))
	return nil
}

// SendInvitation invites email to the actor's organization, at most a
// few mails a minute per address (the limit sign-ups share). The staff
// page sends its form through it too.
func SendInvitation(ctx context.Context, core Inviter, reads AccountReads, limits LoginLimit, a hold.Actor, email string) (store.Invitation, error) {
	email, err := auth.NormalizeEmail(email)
	if err != nil {
		return store.Invitation{}, err
	}
	org, err := reads.OrgByID(ctx, a.Org)
	if err != nil {
		return store.Invitation{}, err
	}
	if err := limits.Mail(ctx, org.ID.String(), email); err != nil {
		return store.Invitation{}, err
	}
	return core.Invite(ctx, org, a.User, email)
}

// List answers the organization's invitations, newest first.
func (h *Invitations) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	list, err := h.core.Invitations(r.Context(), a.Org)
	if err != nil {
		return err
	}
	out := make([]InvitationJSON, len(list))
	for i, inv := range list {
		out[i] = invitationJSON(inv)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// Revoke withdraws a pending invitation (204): its link works no more.
// 409 for one accepted already.
func (h *Invitations) Revoke(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := idAndNoInput(h.dec, w, r, "invitation")
	if err != nil {
		return err
	}
	if err := h.core.RevokeInvitation(r.Context(), a.Org, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
