package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
	"seatd/web/session"
)

// Webhooks: organizers register URLs that receive the organization's
// changes; the deliveries themselves are written by the change's own
// transaction and sent by internal/webhook.

// EndpointCreator registers webhook endpoints, checking their URLs, and
// draws their new signing secrets; *webhook.Endpoints satisfies it.
type EndpointCreator interface {
	Create(ctx context.Context, org uuid.UUID, rawURL string, types []string) (store.WebhookEndpoint, error)
	CreateForKey(ctx context.Context, org, key uuid.UUID, rawURL string, types []string) (store.WebhookEndpoint, error)
	RotateSecret(ctx context.Context, org, id uuid.UUID, grace time.Duration) (store.WebhookEndpoint, error)
}

// WebhookStore lists and deletes endpoints and sends deliveries again;
// *store.Webhooks satisfies it.
type WebhookStore interface {
	Endpoints(ctx context.Context, org uuid.UUID) ([]store.WebhookEndpoint, error)
	DeleteEndpoint(ctx context.Context, org, id uuid.UUID) error
	Redeliver(ctx context.Context, org, endpoint uuid.UUID, id uuid.UUID) error
}

// DeliveryPages reads pages of an endpoint's deliveries; *query.Deliveries
// satisfies it.
type DeliveryPages interface {
	Page(r *http.Request, a hold.Actor) (store.WebhookEndpoint, []store.Delivery, int64, error)
}

// Webhooks registers, lists and deletes the organization's webhook
// endpoints, and lists and resends their deliveries.
type Webhooks struct {
	dec        *httpx.Decoder
	endpoints  EndpointCreator
	store      WebhookStore
	deliveries DeliveryPages
}

// WebhookInput is an endpoint to register, from JSON or the organizer's
// page.
type WebhookInput struct {
	URL    string   `json:"url" validate:"required,max=2000"`
	Events []string `json:"events" validate:"required,min=1,max=20,dive,max=40"`
}

type webhookJSON struct {
	ID        uuid.UUID `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
	// PreviousSecretUntil is when the secret a rotation replaced stops
	// signing beside the new one; absent when no rotation is under way.
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
}

func webhookView(e store.WebhookEndpoint) webhookJSON {
	v := webhookJSON{ID: e.ID, URL: e.URL, Events: e.Events, CreatedAt: e.CreatedAt.UTC()}
	if e.PreviousUntil != nil {
		t := e.PreviousUntil.UTC()
		v.PreviousSecretUntil = &t
	}
	return v
}

// withSecret is an endpoint's answer with its signing secret: after
// Create and RotateSecret only.
func withSecret(e store.WebhookEndpoint) any {
	return struct {
		webhookJSON
		Secret string `json:"secret"`
	}{webhookView(e), e.Secret}
}

// Create registers an endpoint; its signing secret is in this answer
// only. One registered with an API key is deleted when the key is
// revoked.
func (h *Webhooks) Create(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in WebhookInput
	if err := h.dec.JSON(w, r, &in); err != nil {
		return err
	}
	var e store.WebhookEndpoint
	var err error
	if k, ok := session.APIKeyFrom(r.Context()); ok {
		// Deleted when the key is revoked: a leaked key's endpoints go
		// with it.
		e, err = h.endpoints.CreateForKey(r.Context(), a.Org, k.ID, in.URL, in.Events)
	} else {
		e, err = h.endpoints.Create(r.Context(), a.Org, in.URL, in.Events)
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, withSecret(e))
	return nil
}

// RotateInput asks for a rotation of an endpoint's secret: how long the
// old secret keeps signing beside the new one (0 or absent: a day).
type RotateInput struct {
	GraceSeconds int `json:"grace_seconds" validate:"min=0,max=604800"`
}

// RotateSecret gives an endpoint a new signing secret, in this answer
// only; the old one keeps signing beside it until
// previous_secret_until (docs/integrators.md#webhooks).
func (h *Webhooks) RotateSecret(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "webhook")
	if err != nil {
		return err
	}
	var in RotateInput
	if err := h.dec.OptionalJSON(w, r, &in); err != nil {
		return err
	}
	e, err := h.endpoints.RotateSecret(r.Context(), a.Org, id, time.Duration(in.GraceSeconds)*time.Second)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, withSecret(e))
	return nil
}

// List answers the organization's endpoints.
func (h *Webhooks) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return httpx.List(w, "webhooks", webhookView)(h.store.Endpoints(r.Context(), a.Org))
}

// Delete deletes an endpoint; its pending deliveries are given up (204).
func (h *Webhooks) Delete(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "webhook")
	if err != nil {
		return err
	}
	if err := h.store.DeleteEndpoint(r.Context(), a.Org, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type deliveryJSON struct {
	ID            uuid.UUID       `json:"id"`
	Type          string          `json:"type"`
	CreatedAt     time.Time       `json:"created_at"`
	EventID       *uuid.UUID      `json:"event_id"`
	SeatID        *uuid.UUID      `json:"seat_id"`
	Data          json.RawMessage `json:"data"`
	State         string          `json:"state"`
	Attempts      int             `json:"attempts"`
	NextAttemptAt *time.Time      `json:"next_attempt_at"`
	LastStatus    *int            `json:"last_status"`
	LastError     *string         `json:"last_error"`
	DeliveredAt   *time.Time      `json:"delivered_at"`
}

// Deliveries answers a page of an endpoint's deliveries, newest first;
// next_before is the cursor of the page after it.
func (h *Webhooks) Deliveries(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	_, ds, next, err := h.deliveries.Page(r, a)
	if err != nil {
		return err
	}
	out := make([]deliveryJSON, len(ds))
	for i, d := range ds {
		out[i] = deliveryJSON{ID: d.PublicID, Type: d.Type, CreatedAt: d.CreatedAt.UTC(), EventID: d.EventID, SeatID: d.SeatID,
			Data: d.Data, State: d.State, Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: d.LastError, DeliveredAt: d.DeliveredAt}
		if d.State == store.DeliveryPending {
			t := d.NextAt.UTC()
			out[i].NextAttemptAt = &t
		}
	}
	body := map[string]any{"deliveries": out}
	if next > 0 {
		body["next_before"] = strconv.FormatInt(next, 10)
	}
	httpx.WriteJSON(w, http.StatusOK, body)
	return nil
}

// Redeliver sends a delivery again, whatever its state: 202, it is queued.
func (h *Webhooks) Redeliver(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ids, err := httpx.PathIDs(r, "webhook", "delivery")
	if err != nil {
		return err
	}
	if err := h.store.Redeliver(r.Context(), a.Org, ids[0], ids[1]); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusAccepted, map[string]string{"state": store.DeliveryPending})
	return nil
}
