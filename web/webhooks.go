package web

import (
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/webhook"
	"seatd/views"
	"seatd/web/api"
	"seatd/web/httpx"
)

// Webhooks: organizers register URLs that receive the organization's
// changes; the deliveries themselves are written by the change's own
// transaction and sent by internal/webhook.

// redeliverFrom sends the request's delivery again and returns its
// endpoint.
func (s *Server) redeliverFrom(r *http.Request, a hold.Actor) (uuid.UUID, error) {
	id, err := httpx.PathID(r, "webhook")
	if err != nil {
		return id, err
	}
	d, err := httpx.PathID(r, "delivery")
	if err != nil {
		return id, err
	}
	return id, s.deps.Store.Webhooks.Redeliver(r.Context(), a.Org, id, d)
}

// The organizer's webhook pages.

func (s *Server) webhooksPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return s.renderWebhooks(w, r, a, http.StatusOK, views.Webhooks{})
}

func (s *Server) renderWebhooks(w http.ResponseWriter, r *http.Request, a hold.Actor, status int, v views.Webhooks) error {
	es, err := s.deps.Store.Webhooks.Endpoints(r.Context(), a.Org)
	if err != nil {
		return err
	}
	v.Types = webhook.Types
	for _, e := range es {
		v.Endpoints = append(v.Endpoints, views.Webhook{ID: e.ID.String(), URL: e.URL, Events: e.Events, CreatedAt: e.CreatedAt})
	}
	s.render.Render(w, r, status, views.WebhooksPage(s.render.Meta(r, "Webhooks"), v))
	return nil
}

// createWebhookForm registers an endpoint and shows its secret in this
// answer only.
func (s *Server) createWebhookForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	in := api.WebhookInput{URL: f.Get("url"), Events: f["events"]}
	if err := s.dec.Validate(&in); err != nil {
		return err
	}
	e, err := s.hooks.Create(r.Context(), a.Org, in.URL, in.Events)
	if err != nil {
		return err
	}
	return s.renderWebhooks(w, r, a, http.StatusCreated, views.Webhooks{NewSecret: e.Secret, NewURL: e.URL})
}

func (s *Server) deleteWebhookForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "webhook")
	if err != nil {
		return err
	}
	if err := s.deps.Store.Webhooks.DeleteEndpoint(r.Context(), a.Org, id); err != nil {
		return err
	}
	s.sessions.Flash(r.Context(), "Webhook deleted; its pending deliveries were given up.")
	http.Redirect(w, r, "/admin/webhooks", http.StatusSeeOther)
	return nil
}

func (s *Server) deliveriesPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	e, ds, next, err := s.delivery.Page(r, a)
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
	s.render.Render(w, r, http.StatusOK, views.DeliveriesPage(s.render.Meta(r, "Webhook deliveries"), v))
	return nil
}

func (s *Server) redeliverForm(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := s.redeliverFrom(r, a)
	if err != nil {
		return err
	}
	s.sessions.Flash(r.Context(), "The delivery will be sent again in a moment.")
	http.Redirect(w, r, "/admin/webhooks/"+id.String()+"/deliveries", http.StatusSeeOther) // #nosec G710 -- a parsed UUID on our own path
	return nil
}
