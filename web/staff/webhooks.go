package staff

import (
	"net/http"
	"strconv"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/webhook"
	"seatd/views"
	"seatd/web/api"
	"seatd/web/httpx"
)

// Webhooks is the organizer's webhook pages: the endpoints, and each
// one's deliveries (organizers register URLs that receive the
// organization's changes; internal/webhook sends them). It makes the
// API's calls.
type Webhooks struct {
	*frame
	dec        *httpx.Decoder
	endpoints  api.EndpointCreator
	store      api.WebhookStore
	deliveries api.DeliveryPages
}

// Page lists the organization's endpoints with the form for a new one.
func (p *Webhooks) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return p.show(w, r, a, http.StatusOK, views.Webhooks{})
}

func (p *Webhooks) show(w http.ResponseWriter, r *http.Request, a hold.Actor, status int, v views.Webhooks) error {
	es, err := p.store.Endpoints(r.Context(), a.Org)
	if err != nil {
		return err
	}
	v.Types = webhook.Types
	for _, e := range es {
		v.Endpoints = append(v.Endpoints, views.Webhook{ID: e.ID.String(), URL: e.URL, Events: e.Events, CreatedAt: e.CreatedAt,
			PreviousUntil: e.PreviousUntil})
	}
	p.render.Render(w, r, status, views.WebhooksPage(p.render.Meta(r, "Webhooks"), v))
	return nil
}

// Create registers an endpoint and shows its secret in this answer only.
// The form is checked as the API's body is.
func (p *Webhooks) Create(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	in := api.WebhookInput{URL: f.Get("url"), Events: f["events"]}
	if err := p.dec.Validate(&in); err != nil {
		return err
	}
	e, err := p.endpoints.Create(r.Context(), a.Org, in.URL, in.Events)
	if err != nil {
		return err
	}
	return p.show(w, r, a, http.StatusCreated, views.Webhooks{NewSecret: e.Secret, NewURL: e.URL})
}

// RotateSecret gives an endpoint a new signing secret, shown in this
// answer only; the old one keeps signing beside it for the default grace
// (a day), so the receiver can switch in its own time.
func (p *Webhooks) RotateSecret(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "webhook")
	if err != nil {
		return err
	}
	e, err := p.endpoints.RotateSecret(r.Context(), a.Org, id, 0)
	if err != nil {
		return err
	}
	return p.show(w, r, a, http.StatusOK, views.Webhooks{NewSecret: e.Secret, NewURL: e.URL, OldUntil: e.PreviousUntil})
}

// Delete deletes an endpoint; its pending deliveries are given up.
func (p *Webhooks) Delete(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "webhook")
	if err != nil {
		return err
	}
	if err := p.store.DeleteEndpoint(r.Context(), a.Org, id); err != nil {
		return err
	}
	return p.backWith(w, r, "/admin/webhooks", "Webhook deleted; its pending deliveries were given up.")
}

// Deliveries is a page of an endpoint's deliveries, newest first.
func (p *Webhooks) Deliveries(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	e, ds, next, err := p.deliveries.Page(r, a)
	if err != nil {
		return err
	}
	v := views.Deliveries{EndpointID: e.ID.String(), URL: e.URL}
	if next > 0 {
		v.Older = "/admin/webhooks/" + e.ID.String() + "/deliveries?before=" + strconv.FormatInt(next, 10)
	}
	for _, d := range ds {
		row := views.Delivery{ID: d.PublicID.String(), Type: d.Type, CreatedAt: d.CreatedAt, State: d.State,
			Attempts: d.Attempts, DeliveredAt: d.DeliveredAt}
		if d.LastStatus != nil {
			row.LastStatus = strconv.Itoa(*d.LastStatus)
		}
		if d.LastError != nil {
			row.LastError = *d.LastError
		}
		if d.State == store.DeliveryPending && d.Attempts > 0 {
			t := d.NextAt
			row.NextAt = &t
		}
		v.Rows = append(v.Rows, row)
	}
	p.render.Render(w, r, http.StatusOK, views.DeliveriesPage(p.render.Meta(r, "Webhook deliveries"), v))
	return nil
}

// Redeliver sends a delivery again, whatever its state.
func (p *Webhooks) Redeliver(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ids, err := httpx.PathIDs(r, "webhook", "delivery")
	if err != nil {
		return err
	}
	if err := p.store.Redeliver(r.Context(), a.Org, ids[0], ids[1]); err != nil {
		return err
	}
	return p.backWith(w, r, "/admin/webhooks/"+ids[0].String()+"/deliveries", "The delivery will be sent again in a moment.")
}
