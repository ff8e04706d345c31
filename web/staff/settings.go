package staff

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

// OrgSettingsStore reads and sets an organization's settings;
// *store.Accounts reads, *auth.Accounts sets.
type OrgSettingsStore interface {
	OrgByID(ctx context.Context, id uuid.UUID) (store.Org, error)
}

// PolicySetter sets an organization's sign-up policy; *auth.Accounts
// satisfies it.
type PolicySetter interface {
	SetSignupPolicy(ctx context.Context, org uuid.UUID, policy string) error
}

// Settings is the organizer's settings page: the sign-up policy (the
// API's PATCH /api/v1/org).
type Settings struct {
	*frame
	orgs   OrgSettingsStore
	policy PolicySetter
}

// Page shows the settings.
func (p *Settings) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	o, err := p.orgs.OrgByID(r.Context(), a.Org)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.OrgSettings(p.render.Meta(r, "Settings"), o.Slug, o.SignupPolicy))
	return nil
}

// Save sets the sign-up policy of the form.
func (p *Settings) Save(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	if err := p.policy.SetSignupPolicy(r.Context(), a.Org, f.Get("signup_policy")); err != nil {
		return err
	}
	return p.backWith(w, r, "/admin/settings", "Settings saved.")
}
