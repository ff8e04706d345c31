package payment

import (
	"encoding/json"
	"strconv"

	"github.com/stripe/stripe-go/v82"
)

// The test provider's events are Stripe's JSON, trimmed to the fields a
// webhook consumer reads, and decoded by the same stripe-go code as real
// ones (Verifier). Event ids follow from what happened (intent, type,
// attempt or refund): a redelivery has the id of the first delivery, so
// the flow's dedupe sees it for what it is.

type stripeEvent struct {
	ID              string          `json:"id"`
	Object          string          `json:"object"`
	APIVersion      string          `json:"api_version"`
	Created         int64           `json:"created"`
	Livemode        bool            `json:"livemode"`
	PendingWebhooks int             `json:"pending_webhooks"`
	Request         eventRequest    `json:"request"`
	Type            EventType       `json:"type"`
	Data            eventDataObject `json:"data"`
}

type eventRequest struct {
	ID             *string `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

type eventDataObject struct {
	Object any `json:"object"`
}

type stripeIntent struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Amount           int64             `json:"amount"`
	AmountReceived   int64             `json:"amount_received"`
	Currency         string            `json:"currency"`
	ClientSecret     string            `json:"client_secret"`
	Created          int64             `json:"created"`
	Description      string            `json:"description,omitempty"`
	LastPaymentError *stripePayError   `json:"last_payment_error"`
	LatestCharge     *string           `json:"latest_charge"`
	Livemode         bool              `json:"livemode"`
	Metadata         map[string]string `json:"metadata"`
	Status           string            `json:"status"`
}

type stripePayError struct {
	Type        string `json:"type"`
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code"`
	Message     string `json:"message"`
}

type stripeCharge struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Amount         int64             `json:"amount"`
	AmountCaptured int64             `json:"amount_captured"`
	AmountRefunded int64             `json:"amount_refunded"`
	Currency       string            `json:"currency"`
	Created        int64             `json:"created"`
	Livemode       bool              `json:"livemode"`
	Metadata       map[string]string `json:"metadata"`
	Paid           bool              `json:"paid"`
	PaymentIntent  string            `json:"payment_intent"`
	Refunded       bool              `json:"refunded"`
	Refunds        stripeRefundList  `json:"refunds"`
	Status         string            `json:"status"`
}

type stripeRefundList struct {
	Object  string         `json:"object"`
	Data    []stripeRefund `json:"data"`
	HasMore bool           `json:"has_more"`
	URL     string         `json:"url"`
}

type stripeRefund struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Amount        int64             `json:"amount"`
	Charge        string            `json:"charge"`
	Created       int64             `json:"created"`
	Currency      string            `json:"currency"`
	Metadata      map[string]string `json:"metadata"`
	PaymentIntent string            `json:"payment_intent"`
	Reason        *string           `json:"reason"`
	Status        string            `json:"status"`
}

// chargeID is the intent's one charge (the test provider charges once).
func (in TestIntent) chargeID() string { return "ch_test_" + digest(in.ID) }

func (in TestIntent) metadata() map[string]string {
	return map[string]string{MetaPayment: in.PaymentID, MetaOrg: in.OrgID, MetaEvent: in.EventID}
}

// metadata is what seatd wrote on the refund.
func (r TestRefund) metadata(in TestIntent) map[string]string {
	m := map[string]string{MetaPayment: in.PaymentID, MetaOrg: in.OrgID}
	if r.RefundID != "" {
		m[MetaRefund] = r.RefundID
	}
	return m
}

// stripeStatus is in's status in Stripe's words (a declined attempt leaves
// the intent waiting for another payment method).
func (in TestIntent) stripeStatus() string {
	switch in.Status {
	case Succeeded:
		return string(stripe.PaymentIntentStatusSucceeded)
	case Processing:
		return string(stripe.PaymentIntentStatusProcessing)
	case Canceled:
		return string(stripe.PaymentIntentStatusCanceled)
	default:
		return string(stripe.PaymentIntentStatusRequiresPaymentMethod)
	}
}

func (in TestIntent) stripeObject() stripeIntent {
	o := stripeIntent{ID: in.ID, Object: "payment_intent", Amount: in.AmountMinor, Currency: in.Currency,
		ClientSecret: in.ClientSecret, Created: in.Created.Unix(), Description: in.Description,
		Metadata: in.metadata(), Status: in.stripeStatus()}
	if in.Attempts > 0 {
		ch := in.chargeID()
		o.LatestCharge = &ch
	}
	if in.Status == Succeeded {
		o.AmountReceived = in.AmountMinor
	}
	if in.Status == Failed {
		o.LastPaymentError = &stripePayError{Type: string(stripe.ErrorTypeCard), Code: string(stripe.ErrorCodeCardDeclined),
			DeclineCode: string(stripe.DeclineCodeGenericDecline), Message: in.FailureMessage}
	}
	return o
}

// intentEvent is the payment_intent.* event of in's last transition.
func intentEvent(in TestIntent, typ EventType) []byte {
	seq := strconv.Itoa(in.Attempts)
	if typ == EventIntentCanceled {
		seq = "canceled"
	}
	return envelope("evt_test_"+digest(in.ID+"\x00"+string(typ)+"\x00"+seq), typ, in.Changed.Unix(), in.stripeObject())
}

// refundEvent is charge.refunded for refund r of in, the charge listing
// every refund so far, newest first as Stripe lists them.
func refundEvent(in TestIntent, r TestRefund) []byte {
	ch := stripeCharge{ID: in.chargeID(), Object: "charge", Amount: in.AmountMinor, AmountCaptured: in.AmountMinor,
		AmountRefunded: in.refunded(), Currency: in.Currency, Created: in.Changed.Unix(), Metadata: in.metadata(),
		Paid: true, PaymentIntent: in.ID, Refunded: in.refunded() == in.AmountMinor, Status: "succeeded",
		Refunds: stripeRefundList{Object: "list", URL: "/v1/charges/" + in.chargeID() + "/refunds"}}
	for _, x := range in.Refunds {
		o := stripeRefund{ID: x.ID, Object: "refund", Amount: x.AmountMinor, Charge: ch.ID, Created: x.Created.Unix(),
			Currency: in.Currency, Metadata: x.metadata(in), PaymentIntent: in.ID,
			Status: string(stripe.RefundStatusSucceeded)}
		if x.Reason != "" {
			o.Reason = &x.Reason
		}
		ch.Refunds.Data = append([]stripeRefund{o}, ch.Refunds.Data...)
	}
	return envelope("evt_test_"+digest(in.ID+"\x00"+string(EventChargeRefunded)+"\x00"+r.ID), EventChargeRefunded, r.Created.Unix(), ch)
}

func envelope(id string, typ EventType, created int64, object any) []byte {
	b, err := json.Marshal(stripeEvent{ID: id, Object: "event", APIVersion: stripe.APIVersion, Created: created,
		PendingWebhooks: 1, Type: typ, Data: eventDataObject{Object: object}})
	if err != nil {
		panic("payment: test event does not encode: " + err.Error()) // plain structs: cannot happen
	}
	return b
}
