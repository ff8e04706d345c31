// Package bookingmail turns the notices that sales, cancellations and
// refunds queue in their own transactions (migrations 032, 042) into mail
// in the outbox (package mail): a booking's confirmation, with each
// ticket's QR code inline and a PDF of the tickets attached, the notice of
// tickets cancelled, and of money refunded. Every process runs one Worker; notices are claimed with SKIP
// LOCKED and each is rendered, enqueued and deleted in one transaction, and
// the outbox's dedupe key per booking and notice makes a second rendering
// of one notice (a worker that died after enqueueing) a no-op.
package bookingmail

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/mail"
	"seatd/internal/money"
	"seatd/internal/notify"
	"seatd/internal/pg"
	"seatd/internal/store"
	"seatd/internal/ticket"
	"seatd/views/email"
)

// Channel is the NOTIFY channel the queueing triggers announce on.
const Channel = "seatd_booking_mail"

// Store is the notice queue and the read of a booking's mail
// (*store.BookingMail).
type Store interface {
	InTx(ctx context.Context, fn func(tx pgx.Tx) error) error
	Claim(ctx context.Context, tx pgx.Tx, n int) ([]store.BookingNotice, error)
	Done(ctx context.Context, tx pgx.Tx, n store.BookingNotice) error
	Booking(ctx context.Context, db pg.DBTX, org, booking uuid.UUID) (store.BookingDetail, error)
}

// Options are the worker's settings.
type Options struct {
	// PublicURL is where buyers reach seatd (SEATD_PUBLIC_URL): the
	// links in the mail start with it.
	PublicURL string
	// Poll is the backstop: how often an idle worker looks for notices it
	// was not told of.
	Poll time.Duration
	// Batch is how many notices one transaction takes.
	Batch int
}

// Worker renders queued notices into the mail outbox.
type Worker struct {
	st    Store
	codes ticket.Signer
	n     notify.Subscriber
	o     Options
	log   *slog.Logger
}

// New returns a worker over st, signing codes with codes, woken by n.
func New(st Store, codes ticket.Signer, n notify.Subscriber, o Options, log *slog.Logger) *Worker {
	if o.Batch <= 0 {
		o.Batch = 20
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	return &Worker{st: st, codes: codes, n: n, o: o, log: log}
}

// Run renders notices until ctx ends: at once while batches come back
// full, else when a notice is announced on Channel (see notify.Work) or
// after Poll.
func (w *Worker) Run(ctx context.Context) {
	s := notify.Schedule{Cooldown: 100 * time.Millisecond, Settle: 250 * time.Millisecond, Backstop: w.o.Poll}
	notify.Work(ctx, w.n, Channel, s, func(ctx context.Context) time.Duration {
		n, err := w.Once(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			w.log.Warn("booking mail round failed", "err", err)
		case n == w.o.Batch:
			return 0
		}
		return notify.Idle
	})
}

// Once claims one batch of notices and enqueues their mail, returning how
// many it claimed. A notice that cannot be rendered is logged and left
// queued for a later round; the others go out.
func (w *Worker) Once(ctx context.Context) (int, error) {
	var claimed int
	err := w.st.InTx(ctx, func(tx pgx.Tx) error {
		ns, err := w.st.Claim(ctx, tx, w.o.Batch)
		if err != nil {
			return err
		}
		claimed = len(ns)
		for _, n := range ns {
			// A savepoint per notice: one that fails leaves the
			// transaction usable for the rest.
			err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
				if err := w.send(ctx, sp, n); err != nil {
					return err
				}
				return w.st.Done(ctx, sp, n)
			})
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				w.log.Error("booking mail not rendered; it stays queued", "org", n.Org, "booking", n.Booking, "kind", n.Kind, "err", err)
			}
		}
		return nil
	})
	return claimed, err
}

// send enqueues the mail of one notice in tx.
func (w *Worker) send(ctx context.Context, tx pgx.Tx, n store.BookingNotice) error {
	b, err := w.st.Booking(ctx, tx, n.Org, n.Booking)
	if err != nil {
		return err
	}
	var msg mail.Message
	switch n.Kind {
	case store.NoticeConfirmation:
		msg, err = w.confirmation(ctx, b)
	case store.NoticeCancellation:
		msg, err = w.cancellation(ctx, b, n)
	case store.NoticeRefund:
		msg, err = w.refund(ctx, b, n)
	default:
		err = fmt.Errorf("unknown booking mail kind %q", n.Kind)
	}
	if err != nil || msg.To == "" {
		return err
	}
	return mail.Enqueue(ctx, tx, n.Org, msg)
}

// confirmation is a booking's confirmation: its live tickets with their QR
// codes inline and in a PDF. A booking whose every ticket was cancelled
// before its mail went out gets none (its cancellation says so).
func (w *Worker) confirmation(ctx context.Context, b store.BookingDetail) (mail.Message, error) {
	tickets, err := ticket.FromDetail(ctx, w.codes, b)
	if err != nil || len(tickets.Tickets) == 0 {
		return mail.Message{}, err
	}
	view := w.view(b)
	var atts []mail.Attachment
	for i, t := range tickets.Tickets {
		qr, err := ticket.NewQR(t.Code)
		if err != nil {
			return mail.Message{}, err
		}
		tickets.Tickets[i].QR = qr // drawn once, inline and in the PDF
		png, err := qr.PNG(5)
		if err != nil {
			return mail.Message{}, err
		}
		cid := "qr-" + strconv.Itoa(i+1)
		atts = append(atts, mail.Attachment{Filename: cid + ".png", ContentType: "image/png", ContentID: cid, Data: png})
		view.Tickets = append(view.Tickets, email.Ticket{Where: t.Where(), Category: t.Category, Price: t.Price, QR: cid, Code: t.Code})
	}
	view.Total = tickets.Total
	doc, err := ticket.PDF(tickets)
	if err != nil {
		return mail.Message{}, err
	}
	atts = append(atts, mail.Attachment{Filename: "tickets-" + b.Reference + ".pdf", ContentType: "application/pdf", Data: doc})
	text, html, err := email.Render(ctx, email.Layout{Org: b.OrgName, Title: "Your tickets",
		Preheader: b.EventName + ", " + view.When + ". Booking " + view.Reference + ".",
		Footer:    "You get this mail because tickets were booked for you with " + b.OrgName + "."},
		email.Confirmation(view))
	if err != nil {
		return mail.Message{}, err
	}
	return mail.Message{To: b.To, Subject: "Your tickets for " + b.EventName + " (booking " + view.Reference + ")",
		Text: text, HTML: html, Attachments: atts, Key: "booking:" + b.Booking.String() + ":confirmation"}, nil
}

// cancellation is the notice of the tickets one statement cancelled.
func (w *Worker) cancellation(ctx context.Context, b store.BookingDetail, n store.BookingNotice) (mail.Message, error) {
	view := w.view(b)
	gone := map[uuid.UUID]bool{}
	for _, id := range n.Tickets {
		gone[id] = true
	}
	var cancelled []email.Ticket
	var reason string
	for _, t := range b.Tickets {
		switch {
		case gone[t.ID]:
			cancelled = append(cancelled, ticketView(t))
			reason = t.CancelReason
		case !t.Cancelled:
			view.Tickets = append(view.Tickets, ticketView(t))
		}
	}
	if len(cancelled) == 0 {
		return mail.Message{}, nil
	}
	title := "Tickets cancelled"
	if len(cancelled) == 1 {
		title = "A ticket was cancelled"
	}
	text, html, err := email.Render(ctx, email.Layout{Org: b.OrgName, Title: title,
		Preheader: b.EventName + ": booking " + view.Reference + ".",
		Footer:    "You get this mail because tickets were booked for you with " + b.OrgName + "."},
		email.Cancellation(view, cancelled, reason))
	if err != nil {
		return mail.Message{}, err
	}
	return mail.Message{To: b.To, Subject: title + ": " + b.EventName + " (booking " + view.Reference + ")",
		Text: text, HTML: html, Key: "booking:" + b.Booking.String() + ":cancellation:" + strconv.FormatInt(n.ID, 10)}, nil
}

// refund is the notice of money returned for b: the amount in its
// currency, the tickets whose prices it returns, and what is still valid.
// The key is the refund's: whatever retries the refund's success (the
// provider's answer and its webhooks), the buyer gets one mail.
func (w *Worker) refund(ctx context.Context, b store.BookingDetail, n store.BookingNotice) (mail.Message, error) {
	view := w.view(b)
	returned := map[uuid.UUID]bool{}
	for _, id := range n.Tickets {
		returned[id] = true
	}
	var refunded []email.Ticket
	for _, t := range b.Tickets {
		switch {
		case returned[t.ID]:
			refunded = append(refunded, ticketView(t))
		case !t.Cancelled:
			view.Tickets = append(view.Tickets, ticketView(t))
		}
	}
	amount := money.Format(n.AmountMinor, n.Currency)
	text, html, err := email.Render(ctx, email.Layout{Org: b.OrgName, Title: "Your refund",
		Preheader: amount + " refunded: " + b.EventName + ", booking " + view.Reference + ".",
		Footer:    "You get this mail because tickets were booked for you with " + b.OrgName + "."},
		email.Refund(view, refunded, amount))
	if err != nil {
		return mail.Message{}, err
	}
	return mail.Message{To: b.To, Subject: "Refund of " + amount + ": " + b.EventName + " (booking " + view.Reference + ")",
		Text: text, HTML: html, Key: "booking:" + b.Booking.String() + ":refund:" + n.Refund.String()}, nil
}

// view is what every mail of b shows but its tickets. An online buyer's
// mail links their booking page; a box-office customer has no account to
// see it with.
func (w *Worker) view(b store.BookingDetail) email.Booking {
	v := email.Booking{Reference: store.FormatReference(b.Reference), Holder: b.Holder, Event: b.EventName,
		Venue: b.Venue, When: eventOf(b).When()}
	if b.Holder == "" {
		v.URL = w.o.PublicURL + "/bookings/" + b.Booking.String()
	}
	return v
}

func eventOf(b store.BookingDetail) ticket.Event {
	return ticket.Event{Name: b.EventName, Venue: b.Venue, StartsAt: b.StartsAt, TimeZone: b.TimeZone}
}

func ticketView(t store.TicketDetail) email.Ticket {
	tk := ticket.OfDetail(t)
	return email.Ticket{Where: tk.Where(), Category: tk.Category, Price: tk.Price}
}
