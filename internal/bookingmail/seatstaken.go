package bookingmail

import (
	"context"

	"github.com/jackc/pgx/v5"

	"seatd/internal/mail"
	"seatd/internal/money"
	"seatd/internal/store"
	"seatd/views/email"
)

// SeatsTaken returns the mail of a payment refunded in full because its
// seats were taken after its holds lapsed: written to the outbox in the
// transaction that records the refund (there is no booking, so no notice
// for the Worker), keyed by the payment, so the buyer gets it once
// whatever the provider's deliveries. publicURL starts the link to the
// payment's page, which says the same.
func SeatsTaken(publicURL string) store.SeatsTakenMail {
	return func(ctx context.Context, tx pgx.Tx, n store.SeatsTakenNotice) error {
		amount := money.Format(n.AmountMinor, n.Currency)
		url := publicURL + "/payments/" + n.Payment.String()
		text, html, err := email.Render(ctx, email.Layout{Org: n.OrgName, Title: "Your payment is refunded",
			Preheader: amount + " refunded: the seats for " + n.EventName + " were taken before your payment came through.",
			Footer:    "You get this mail because you paid for seats with " + n.OrgName + "."},
			email.SeatsTakenRefund(n.EventName, amount, n.Reason, url))
		if err != nil {
			return err
		}
		return mail.Enqueue(ctx, tx, n.Org, mail.Message{To: n.To, Subject: "Refund of " + amount + ": " + n.EventName + " (seats taken)",
			Text: text, HTML: html, Key: "payment:" + n.Payment.String() + ":seats-taken"})
	}
}
