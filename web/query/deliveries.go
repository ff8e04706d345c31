package query

import (
	"context"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// deliveriesPageSize is the number of deliveries listed per page.
const deliveriesPageSize = 50

// DeliveryStore reads webhook endpoints and their deliveries;
// *store.Webhooks satisfies it.
type DeliveryStore interface {
	Endpoint(ctx context.Context, org, id uuid.UUID) (store.WebhookEndpoint, error)
	Deliveries(ctx context.Context, org, endpoint uuid.UUID, before int64, limit int) ([]store.Delivery, error)
}

// Deliveries reads pages of an endpoint's deliveries, for the JSON list
// and the organizer's page.
type Deliveries struct {
	store DeliveryStore
}

// NewDeliveries returns the reads of deliveries in st.
func NewDeliveries(st DeliveryStore) *Deliveries { return &Deliveries{store: st} }

// Page reads the request's page of the {webhook} endpoint's deliveries,
// newest first (?before= a cursor from the previous page); next is the
// cursor of the page after it, 0 on the last page.
func (q *Deliveries) Page(r *http.Request, a hold.Actor) (e store.WebhookEndpoint, ds []store.Delivery, next int64, err error) {
	id, err := httpx.PathID(r, "webhook")
	if err != nil {
		return e, nil, 0, err
	}
	var before int64
	if b := r.URL.Query().Get("before"); b != "" {
		if before, err = strconv.ParseInt(b, 10, 64); err != nil || before <= 0 {
			return e, nil, 0, &apperr.Error{Code: apperr.Invalid, Message: "before must be a cursor from a previous page",
				Fields: map[string]string{"before": "must be a positive integer"}}
		}
	}
	if e, err = q.store.Endpoint(r.Context(), a.Org, id); err != nil {
		return e, nil, 0, err
	}
	if ds, err = q.store.Deliveries(r.Context(), a.Org, id, before, deliveriesPageSize+1); err != nil {
		return e, nil, 0, err
	}
	if len(ds) > deliveriesPageSize {
		ds = ds[:deliveriesPageSize]
		next = ds[len(ds)-1].ID
	}
	return e, ds, next, nil
}
