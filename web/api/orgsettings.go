package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/web/httpx"
)

// SignupPolicySetter changes who may sign up on an organization's
// storefront; *auth.Accounts satisfies it.
type SignupPolicySetter interface {
	SetSignupPolicy(ctx context.Context, org uuid.UUID, policy string) error
}

// Org is the organization's settings (docs/api.md#accounts): read by
// its organizers, who set its sign-up policy.
type Org struct {
	dec    *httpx.Decoder
	reads  AccountReads
	policy SignupPolicySetter
}

// OrgJSON is an organization's settings.
type OrgJSON struct {
	ID           uuid.UUID `json:"id"`
	Slug         string    `json:"slug"`
	Name         string    `json:"name"`
	SignupPolicy string    `json:"signup_policy"`
}

type orgInput struct {
	SignupPolicy *string `json:"signup_policy" validate:"omitnil,oneof=open invite_only closed"`
}

// Get answers the organization's settings.
func (h *Org) Get(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	o, err := h.reads.OrgByID(r.Context(), a.Org)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, OrgJSON{ID: o.ID, Slug: o.Slug, Name: o.Name, SignupPolicy: o.SignupPolicy})
	return nil
}

// Update changes the settings given (signup_policy) and answers them all.
func (h *Org) Update(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in orgInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	if in.SignupPolicy != nil {
		if err := h.policy.SetSignupPolicy(r.Context(), a.Org, *in.SignupPolicy); err != nil {
			return err
		}
	}
	return h.Get(w, r, a)
}
