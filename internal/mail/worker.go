package mail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	netmail "net/mail"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"seatd/internal/notify"
	"seatd/internal/telemetry"
)

// Options are the worker's settings (see config: SEATD_MAIL_*).
type Options struct {
	// From is the default sender (SEATD_MAIL_FROM): its address for
	// organizations without one of their own.
	From netmail.Address
	// Poll is the backstop: how often an idle worker looks for due mail
	// without being woken (a retry's time comes, a wake-up was lost).
	Poll time.Duration
	// RetryFor: a message still failing this long after it was enqueued
	// is given up.
	RetryFor time.Duration
	// Backoff is the wait after a first failed attempt; it doubles per
	// failure up to BackoffMax, ±20 % jitter.
	Backoff    time.Duration
	BackoffMax time.Duration
	// Batch is how many messages one claim takes, sent over one SMTP
	// connection.
	Batch int
	// Timeout bounds each SMTP step (connect, each command, the data).
	Timeout time.Duration
	// Keep is how long sent and given-up messages stay in the outbox;
	// their dedupe keys stay taken that long.
	Keep time.Duration
}

// DefaultOptions are the settings SEATD_MAIL_* do not set.
func DefaultOptions() Options {
	return Options{
		From:       netmail.Address{Name: "seatd", Address: "no-reply@localhost"},
		Poll:       5 * time.Second,
		RetryFor:   48 * time.Hour,
		Backoff:    10 * time.Second,
		BackoffMax: 10 * time.Minute,
		Batch:      10,
		Timeout:    30 * time.Second,
		Keep:       30 * 24 * time.Hour,
	}
}

// Worker sends the outbox's due messages over SMTP. Every process runs
// one; they share the outbox through claims (see claim).
//
// Delivery is at least once. A message is marked sent right after the
// server accepted it; if that update fails (Postgres unreachable for the
// few tries markSent gets) or the process dies between the two, the
// message is sent again once its claim's lease ends. Likewise when the
// connection breaks after the data was sent but before the server's
// answer arrived (a timeout, a shutdown): the outcome is unknown and the
// message is tried again. The other choice, marking a message sent before
// sending it, loses mail in the same windows — worse for a ticket than a
// second copy. A copy keeps its Message-ID (derived from the outbox row),
// so mail clients and providers that drop duplicates by it do.
type Worker struct {
	db  DBTX
	srv Server
	o   Options
	log *slog.Logger
	m   *telemetry.Mail
	n   notify.Subscriber
	now func() time.Time
	// pruned is when Run last pruned (only its goroutine touches it).
	pruned time.Time
}

// NewWorker returns a worker sending the outbox of db through srv, woken
// by n's notifications.
func NewWorker(db DBTX, srv Server, n notify.Subscriber, o Options, log *slog.Logger, m *telemetry.Mail) *Worker {
	return &Worker{db: db, srv: srv, n: n, o: o, log: log, m: m, now: time.Now}
}

// lease is how long a claim keeps its messages from other workers, and
// so how long a crashed worker's messages wait: a batch takes seconds,
// and one whose server is slow stops at lease-leaseMargin (the rest of
// its messages go back to the queue), so no message is ever sent by two
// workers at once.
func (w *Worker) lease() time.Duration { return 2*time.Minute + 2*w.o.Timeout }

const leaseMargin = 30 * time.Second

// Run sends mail until ctx ends: it claims a batch, sends it, and goes on
// at once while batches come back full. Else it waits for mail announced
// on Channel (see notify.Work for when exactly) or Poll, the backstop for
// what it was not told of (a retry falling due, announcements lost).
func (w *Worker) Run(ctx context.Context) {
	s := notify.Schedule{Cooldown: 100 * time.Millisecond, Settle: 250 * time.Millisecond, Backstop: w.o.Poll}
	notify.Work(ctx, w.n, Channel, s, func(ctx context.Context) time.Duration {
		w.maybePrune(ctx)
		n, err := w.Once(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			w.log.Warn("mail round failed", "err", err)
		case n == w.o.Batch:
			return 0
		}
		return notify.Idle
	})
}

// Once claims one batch and sends it over one SMTP connection, returning
// how many messages it claimed.
func (w *Worker) Once(ctx context.Context) (int, error) {
	lease := w.lease()
	batch, err := claim(ctx, w.db, w.o.Batch, lease)
	if err != nil || len(batch) == 0 {
		return 0, err
	}
	// The outcomes are recorded even when ctx ended meanwhile (shutdown):
	// otherwise a sent message would be sent again after the lease.
	rec, cancelRec := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancelRec()
	sendCtx, cancelSend := context.WithTimeout(ctx, lease-leaseMargin)
	defer cancelSend()
	c, err := w.srv.dial(sendCtx, w.o.Timeout)
	if err != nil && ctx.Err() != nil {
		// Shutting down: not an attempt; another process takes them.
		return len(batch), release(rec, w.db, batch)
	}
	if err != nil {
		err = fmt.Errorf("connect to %s: %w", w.srv, err)
		for _, m := range batch {
			w.failed(rec, m, err, false)
		}
		// Reported, so Run logs it and waits for the next poll rather
		// than claiming the next batch for the same refusal.
		return len(batch), err
	}
	defer c.close()
	for i, m := range batch {
		if sendCtx.Err() != nil {
			return len(batch), release(rec, w.db, batch[i:])
		}
		err := w.send(sendCtx, c, m)
		if err == nil {
			w.sent(rec, m)
			continue
		}
		if ctx.Err() != nil {
			// Cut short by the shutdown, not refused by the server:
			// not an attempt. This message (its outcome unknown) and
			// the rest go back to the queue for another process now,
			// rather than after a backoff.
			return len(batch), release(rec, w.db, batch[i:])
		}
		var se *gomail.SendError
		// A recipient refused for good (5xx to RCPT TO: no such
		// mailbox) will not be accepted later; anything else might be.
		permanent := errors.As(err, &se) && se.Reason == gomail.ErrSMTPRcptTo && se.ErrorCode() >= 500
		w.failed(rec, m, err, permanent)
		if !errors.As(err, &se) || (se.Reason != gomail.ErrSMTPRcptTo && se.Reason != gomail.ErrSMTPMailFrom) {
			// The session may be broken: the rest go back to the
			// queue for the next round's fresh connection.
			return len(batch), release(rec, w.db, batch[i+1:])
		}
	}
	return len(batch), nil
}

// send builds m and sends it over c.
func (w *Worker) send(ctx context.Context, c *conn, m claimed) error {
	atts, err := attachments(ctx, w.db, m)
	if err != nil {
		return err
	}
	msg, err := w.build(m, atts)
	if err != nil {
		return err
	}
	err = c.send(msg)
	if msg.IsDelivered() {
		// Accepted; an error after that (the RSET that follows) does
		// not undo it.
		return nil
	}
	if err == nil {
		err = errors.New("the server did not accept the message")
	}
	return err
}

// build makes the MIME message: text and HTML as alternatives, inline
// images beside the HTML, attachments after.
func (w *Worker) build(m claimed, atts []Attachment) (*gomail.Msg, error) {
	msg := gomail.NewMsg()
	f := from(m.Sender, m.OrgName, w.o.From)
	msg.FromMailAddress(f)
	if err := msg.To(m.To); err != nil {
		return nil, err
	}
	msg.Subject(m.Subject)
	msg.SetDateWithValue(m.CreatedAt)
	domain := "seatd.invalid"
	if _, d, ok := strings.Cut(f.Address, "@"); ok && d != "" {
		domain = d
	}
	// The same for every attempt: a copy sent twice is recognisable.
	msg.SetMessageIDWithValue(fmt.Sprintf("mail.%d.%s@%s", m.ID, m.Org, domain))
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}
	for _, a := range atts {
		opts := []gomail.FileOption{gomail.WithFileContentType(gomail.ContentType(a.ContentType))}
		if a.ContentID != "" {
			msg.EmbedReadSeeker(a.Filename, bytes.NewReader(a.Data), append(opts, gomail.WithFileContentID(a.ContentID))...)
		} else {
			msg.AttachReadSeeker(a.Filename, bytes.NewReader(a.Data), opts...)
		}
	}
	return msg, nil
}

// sent records m as sent. The update is tried a few times: until it
// succeeds, m would be sent again after its lease.
func (w *Worker) sent(ctx context.Context, m claimed) {
	w.m.Attempts.WithLabelValues("sent").Inc()
	w.m.Latency.Observe(w.now().Sub(m.CreatedAt).Seconds())
	var err error
	for try := range 3 {
		if err = markSent(ctx, w.db, m); err == nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(try+1) * 500 * time.Millisecond):
		}
	}
	w.log.Error("mail sent but not marked sent: it will be sent again after its lease", "mail", m.ID, "err", err)
}

// failed records a failed attempt of m.
func (w *Worker) failed(ctx context.Context, m claimed, cause error, permanent bool) {
	reason := clip(cause.Error(), 500)
	wait := w.backoff(m.Attempts)
	givenUp, err := markFailed(ctx, w.db, m, reason, wait, w.o.RetryFor, permanent)
	switch {
	case err != nil:
		// The claim's lease brings it back.
		w.log.Warn("mail attempt not recorded", "mail", m.ID, "err", err)
		w.m.Attempts.WithLabelValues("retry").Inc()
	case givenUp:
		w.m.Attempts.WithLabelValues("given_up").Inc()
		w.log.Warn("mail given up", "mail", m.ID, "org", m.Org, "attempts", m.Attempts, "permanent", permanent, "err", reason)
	default:
		w.m.Attempts.WithLabelValues("retry").Inc()
		w.log.Info("mail attempt failed", "mail", m.ID, "attempts", m.Attempts, "retry_in", wait.Round(time.Second), "err", reason)
	}
}

// backoff is the wait after the n-th failed attempt: Backoff doubled per
// failure, at most BackoffMax, with ±20 % jitter so that messages that
// failed together (the server down) do not all come back at once.
func (w *Worker) backoff(n int) time.Duration {
	d := w.o.BackoffMax
	if n <= 30 {
		d = min(w.o.Backoff<<max(n-1, 0), w.o.BackoffMax)
	}
	jitter := 0.8 + 0.4*rand.Float64() // #nosec G404 -- spreading retries needs no secrecy
	return time.Duration(float64(d) * jitter)
}

// pruneEvery is how often a worker deletes old messages.
const pruneEvery = time.Hour

// maybePrune deletes messages finished more than Keep ago, a batch at a
// time, at most once per pruneEvery per worker.
func (w *Worker) maybePrune(ctx context.Context) {
	now := w.now()
	if w.o.Keep <= 0 || now.Sub(w.pruned) < pruneEvery {
		return
	}
	w.pruned = now
	n, err := prune(ctx, w.db, now.Add(-w.o.Keep), 10_000)
	switch {
	case err != nil:
		w.log.Warn("prune mail", "err", err)
	case n > 0:
		w.log.Info("pruned mail", "count", n)
	}
}

// clip shortens s to at most n bytes of valid UTF-8 (a server's answer
// may carry any bytes; Postgres text takes only UTF-8).
func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}
