package mail_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a-h/templ"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/mail"
	"seatd/internal/telemetry"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/views/email"
)

// outbox is a test's own database (workers claim from the whole outbox,
// so tests running at once must not share one) with an organization.
type outbox struct {
	t   *testing.T
	a   *app.App
	org uuid.UUID
}

func newOutbox(t *testing.T) *outbox {
	t.Helper()
	dbURL := testsvc.OwnDatabase(t, "mail_"+strings.ToLower(t.Name()))
	a := testenv.App(t, func(c *config.Config) {
		c.DatabaseURL = dbURL
		c.SMTPURL = "" // the tests run their own workers
	})
	return &outbox{t: t, a: a, org: testenv.NewTenant(t, a, 0).Org.ID}
}

// worker is a mail worker on o's outbox sending to smtpURL, with quick
// retries; mod changes its options. Its metrics are its own.
func (o *outbox) worker(smtpURL string, mod func(*mail.Options)) (*mail.Worker, *telemetry.Mail) {
	o.t.Helper()
	return o.workerOn(o.a.Pool, smtpURL, mod)
}

func (o *outbox) workerOn(pool *pgxpool.Pool, smtpURL string, mod func(*mail.Options)) (*mail.Worker, *telemetry.Mail) {
	o.t.Helper()
	srv, err := mail.ParseURL(smtpURL)
	if err != nil {
		o.t.Fatal(err)
	}
	opts := mail.DefaultOptions()
	opts.From = netmail.Address{Name: "seatd tests", Address: "tickets@seatd.example"}
	opts.Poll, opts.Backoff, opts.BackoffMax, opts.Timeout = 200*time.Millisecond, 100*time.Millisecond, 400*time.Millisecond, 5*time.Second
	if mod != nil {
		mod(&opts)
	}
	m := telemetry.NewMail(prometheus.NewRegistry(), func() (telemetry.MailQueue, bool) { return telemetry.MailQueue{}, false })
	return mail.NewWorker(pool, srv, testenv.Notifier(o.t, o.a), opts, testsvc.Logger(o.t), m), m
}

// run runs w until the test ends.
func run(t *testing.T, w *mail.Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// enqueue commits msg in a transaction of its own.
func (o *outbox) enqueue(msg mail.Message) {
	o.t.Helper()
	ctx := context.Background()
	tx, err := o.a.Pool.Begin(ctx)
	if err != nil {
		o.t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := mail.Enqueue(ctx, tx, o.org, msg); err != nil {
		o.t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		o.t.Fatal(err)
	}
}

// row is a message's state in the outbox.
type row struct {
	Status    string
	Attempts  int
	LastError string
	Due       bool // next attempt time passed
}

func (o *outbox) rows(to string) []row {
	o.t.Helper()
	rs, err := o.a.Pool.Query(context.Background(), `SELECT status, attempts, COALESCE(last_error, ''), next_attempt_at <= now()
		FROM mail_outbox WHERE recipient = $1 ORDER BY id`, to)
	if err != nil {
		o.t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.Status, &r.Attempts, &r.LastError, &r.Due); err != nil {
			o.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func recipient(tag string) string {
	return tag + "-" + strings.ReplaceAll(uuid.NewString()[:13], "-", "") + "@buyers.example"
}

// A PDF's first bytes and a PNG's, with some binary after them: the
// attachments must come back byte for byte.
var (
	pdf = append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte{0, 1, 2, 0xff, 0xfe, '\r', '\n'}, 40_000)...)
	png = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0x00, 0x80, 0xff}, 500)...)
)

// TestCommittedMailDeliveredOnce: a message enqueued in a committed
// transaction reaches Mailpit once, with its text and HTML parts, its PDF
// attachment and its inline image byte for byte, from the organization's
// sender; it is marked sent after one attempt.
func TestCommittedMailDeliveredOnce(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.MailpitFromEnv(t)
	to := recipient("committed")
	text, html, err := email.Render(context.Background(), email.Layout{Org: "Test hall", Title: "Your tickets",
		Footer: "You bought tickets."}, templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, `<p>Seat A-1, row A.</p><img src="cid:qr-1" alt="Ticket QR code">`)
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := mail.SetSender(context.Background(), o.a.Pool, o.org, mail.Sender{Address: "box@hall.example", Name: "Hall box office"}); err != nil {
		t.Fatal(err)
	}
	o.enqueue(mail.Message{To: to, Subject: "Your tickets for Hamlet", Text: text, HTML: html, Key: "booking:1:confirmation",
		Attachments: []mail.Attachment{
			{Filename: "tickets.pdf", ContentType: "application/pdf", Data: pdf},
			{Filename: "qr-1.png", ContentType: "image/png", ContentID: "qr-1", Data: png},
		}})
	w, m := o.worker(mp.SMTPURL(), nil)
	run(t, w)

	var got []testsvc.MailSummary
	testsvc.Eventually(t, 20*time.Second, "the message in Mailpit", func() bool { got = mp.To(to); return len(got) > 0 })
	testsvc.Eventually(t, 10*time.Second, "the message marked sent", func() bool {
		r := o.rows(to)
		return len(r) == 1 && r[0].Status == "sent"
	})
	// Another round sends nothing more.
	if n, err := w.Once(context.Background()); err != nil || n != 0 {
		t.Fatalf("another claim: %d, %v; want nothing left", n, err)
	}
	if got = mp.To(to); len(got) != 1 {
		t.Fatalf("%d messages to %s, want 1", len(got), to)
	}
	if r := o.rows(to); r[0].Attempts != 1 {
		t.Errorf("attempts %d, want 1", r[0].Attempts)
	}
	if got := testutil.ToFloat64(m.Attempts.WithLabelValues("sent")); got != 1 {
		t.Errorf("sent %v, want 1", got)
	}

	msg := mp.Message(got[0].ID)
	if msg.Subject != "Your tickets for Hamlet" || msg.From.Address != "box@hall.example" || msg.From.Name != "Hall box office" {
		t.Errorf("subject %q from %+v", msg.Subject, msg.From)
	}
	if !strings.Contains(msg.Text, "Seat A-1, row A.") || !strings.Contains(msg.Text, "[Ticket QR code]") || strings.Contains(msg.Text, "<p>") {
		t.Errorf("text part:\n%s", msg.Text)
	}
	if !strings.Contains(msg.HTML, `<p>Seat A-1, row A.</p>`) || !strings.Contains(msg.HTML, `src="cid:qr-1"`) {
		t.Errorf("HTML part:\n%s", msg.HTML)
	}
	if len(msg.Attachments) != 1 || msg.Attachments[0].FileName != "tickets.pdf" || msg.Attachments[0].ContentType != "application/pdf" {
		t.Fatalf("attachments %+v", msg.Attachments)
	}
	if b := mp.Part(msg.ID, msg.Attachments[0].PartID); !bytes.Equal(b, pdf) {
		t.Errorf("the PDF came back as %d bytes, want the %d sent", len(b), len(pdf))
	}
	if len(msg.Inline) != 1 || msg.Inline[0].ContentID != "qr-1" || msg.Inline[0].ContentType != "image/png" {
		t.Fatalf("inline parts %+v", msg.Inline)
	}
	if b := mp.Part(msg.ID, msg.Inline[0].PartID); !bytes.Equal(b, png) {
		t.Errorf("the inline image came back as %d bytes, want the %d sent", len(b), len(png))
	}
	if !strings.HasSuffix(msg.MessageID, "@hall.example") {
		t.Errorf("Message-ID %q, want one of the sender's domain", msg.MessageID)
	}
}

// TestRolledBackMailNeverSent: a message enqueued in a transaction that
// rolls back leaves nothing in the outbox and is never sent, while one
// committed after it is.
func TestRolledBackMailNeverSent(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.MailpitFromEnv(t)
	gone, marker := recipient("rolledback"), recipient("marker")
	ctx := context.Background()
	tx, err := o.a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := mail.Enqueue(ctx, tx, o.org, mail.Message{To: gone, Subject: "Never", Text: "never", Key: "k1"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	w, _ := o.worker(mp.SMTPURL(), nil)
	run(t, w)
	o.enqueue(mail.Message{To: marker, Subject: "After", Text: "after", Key: "k2"})
	testsvc.Eventually(t, 20*time.Second, "the committed message in Mailpit", func() bool { return len(mp.To(marker)) == 1 })
	if n := len(mp.To(gone)); n != 0 {
		t.Errorf("%d messages of the rolled-back transaction sent", n)
	}
	if r := o.rows(gone); len(r) != 0 {
		t.Errorf("the rolled-back message is in the outbox: %+v", r)
	}
}

// TestSameKeyOnce: a message enqueued again with the same key — after the
// first committed, or by a transaction running at the same time — is
// written and sent once. The same key in another organization is
// another message.
func TestSameKeyOnce(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.MailpitFromEnv(t)
	ctx := context.Background()
	to, other := recipient("dedupe"), recipient("dedupe-other-org")
	msg := mail.Message{To: to, Subject: "Your tickets", Text: "Seat A-1", Key: "booking:42:confirmation"}
	o.enqueue(msg)
	o.enqueue(msg)
	// Two transactions at once: the second waits for the first and, once
	// it committed, writes nothing.
	tx1, err := o.a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback(ctx)
	msg2 := msg
	msg2.Key = "booking:43:confirmation"
	if err := mail.Enqueue(ctx, tx1, o.org, msg2); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		tx2, err := o.a.Pool.Begin(ctx)
		if err == nil {
			defer tx2.Rollback(ctx)
			if err = mail.Enqueue(ctx, tx2, o.org, msg2); err == nil {
				err = tx2.Commit(ctx)
			}
		}
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("the second transaction did not wait for the first: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := tx1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	org2 := testenv.NewTenant(t, o.a, 0).Org.ID
	if err := mail.Enqueue(ctx, o.a.Pool, org2, mail.Message{To: other, Subject: "Theirs", Text: "x", Key: msg.Key}); err != nil {
		t.Fatal(err)
	}

	w, _ := o.worker(mp.SMTPURL(), nil)
	run(t, w)
	testsvc.Eventually(t, 20*time.Second, "every message sent", func() bool {
		r, r2 := o.rows(to), o.rows(other)
		return len(r) == 2 && r[0].Status == "sent" && r[1].Status == "sent" && len(r2) == 1 && r2[0].Status == "sent"
	})
	if n := len(mp.To(to)); n != 2 {
		t.Errorf("%d messages sent for 2 keys enqueued 5 times, want 2", n)
	}
	if n := len(mp.To(other)); n != 1 {
		t.Errorf("the other organization's message with the same key: %d sent, want 1", n)
	}
}

// TestMailpitDownThenUp: while the mail server is down, messages stay
// queued, each attempt counted with its error and the next one backed
// off; once it is back every message is delivered, none twice.
func TestMailpitDownThenUp(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.StartMailpit(t)
	w, m := o.worker(mp.SMTPURL(), func(opts *mail.Options) { opts.Batch = 3 })
	mp.Stop()
	var tos []string
	for i := range 7 {
		to := recipient(fmt.Sprintf("down%d", i))
		tos = append(tos, to)
		o.enqueue(mail.Message{To: to, Subject: "Queued", Text: "while the server is down", Key: to})
	}
	run(t, w)
	testsvc.Eventually(t, 20*time.Second, "every message tried at least twice, and queued", func() bool {
		for _, to := range tos {
			r := o.rows(to)
			if len(r) != 1 || r[0].Status != "queued" || r[0].Attempts < 2 || !strings.Contains(r[0].LastError, "connect") {
				return false
			}
		}
		return true
	})
	if testutil.ToFloat64(m.Attempts.WithLabelValues("retry")) < 7 || testutil.ToFloat64(m.Attempts.WithLabelValues("sent")) != 0 {
		t.Errorf("metrics: %v retries, %v sent", testutil.ToFloat64(m.Attempts.WithLabelValues("retry")),
			testutil.ToFloat64(m.Attempts.WithLabelValues("sent")))
	}
	// Backoff: the retries are not due at once after a failure.
	var backedOff bool
	testsvc.Eventually(t, 10*time.Second, "a message waiting for its next attempt", func() bool {
		backedOff = !o.rows(tos[0])[0].Due
		return backedOff
	})

	mp.Start()
	testsvc.Eventually(t, 30*time.Second, "every message sent", func() bool {
		for _, to := range tos {
			if r := o.rows(to); r[0].Status != "sent" {
				return false
			}
		}
		return true
	})
	for _, to := range tos {
		if n := len(mp.To(to)); n != 1 {
			t.Errorf("%s: %d messages, want 1", to, n)
		}
	}
}

// TestTwoWorkersEachMessageOnce: two workers (each with its own
// connections, as two processes have) on one outbox send each message
// once, and share the work.
func TestTwoWorkersEachMessageOnce(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.MailpitFromEnv(t)
	const n = 40
	tag := recipient("two")
	var tos []string
	for i := range n {
		// Of one length: Mailpit's to: matches a part of an address.
		to := fmt.Sprintf("%03d-%s", i, tag)
		tos = append(tos, to)
		o.enqueue(mail.Message{To: to, Subject: "One of many", Text: "each once", Key: to})
	}
	second, err := pgxpool.New(context.Background(), o.a.Cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Close)
	w1, m1 := o.worker(mp.SMTPURL(), func(opts *mail.Options) { opts.Batch = 3 })
	w2, m2 := o.workerOn(second, mp.SMTPURL(), func(opts *mail.Options) { opts.Batch = 3 })
	run(t, w1)
	run(t, w2)
	testsvc.Eventually(t, 60*time.Second, "every message sent", func() bool {
		var left int
		if err := o.a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM mail_outbox WHERE status <> 'sent'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left == 0
	})
	for _, to := range tos {
		if got := len(mp.To(to)); got != 1 {
			t.Errorf("%s: %d messages, want 1", to, got)
		}
		if r := o.rows(to); r[0].Attempts != 1 {
			t.Errorf("%s: %d attempts, want 1", to, r[0].Attempts)
		}
	}
	s1, s2 := testutil.ToFloat64(m1.Attempts.WithLabelValues("sent")), testutil.ToFloat64(m2.Attempts.WithLabelValues("sent"))
	if s1+s2 != n {
		t.Errorf("the workers sent %v + %v, want %d in all", s1, s2, n)
	}
	t.Logf("worker 1 sent %v, worker 2 sent %v", s1, s2)
}

// TestRefusedRecipientGivenUp: a recipient the server refuses for good
// (550 to RCPT TO) is given up after one attempt, logged and counted;
// others in the same batch are delivered.
func TestRefusedRecipientGivenUp(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.StartMailpit(t, "--smtp-allowed-recipients", "^ok-")
	refused, ok := recipient("refused"), recipient("ok")
	o.enqueue(mail.Message{To: refused, Subject: "No", Text: "no such mailbox", Key: "a"})
	o.enqueue(mail.Message{To: ok, Subject: "Yes", Text: "delivered", Key: "b"})
	var logs syncBuffer
	srv, _ := mail.ParseURL(mp.SMTPURL())
	m := telemetry.NewMail(prometheus.NewRegistry(), func() (telemetry.MailQueue, bool) { return telemetry.MailQueue{}, false })
	w := mail.NewWorker(o.a.Pool, srv, testenv.Notifier(t, o.a), mail.DefaultOptions(), slog.New(slog.NewTextHandler(&logs, nil)), m)
	if n, err := w.Once(context.Background()); n != 2 || err != nil {
		t.Fatalf("once: %d, %v", n, err)
	}
	if r := o.rows(refused); r[0].Status != "failed" || r[0].Attempts != 1 || !strings.Contains(r[0].LastError, "550") {
		t.Errorf("refused recipient: %+v, want failed after 1 attempt with the 550", r)
	}
	if r := o.rows(ok); r[0].Status != "sent" || len(mp.To(ok)) != 1 {
		t.Errorf("the other message: %+v, %d in Mailpit", r, len(mp.To(ok)))
	}
	if got := testutil.ToFloat64(m.Attempts.WithLabelValues("given_up")); got != 1 {
		t.Errorf("given_up %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "mail given up") {
		t.Errorf("log: %s", logs.String())
	}
}

// TestGivenUpAfterRetryFor: a message still failing RetryFor after it
// was enqueued is given up rather than tried again.
func TestGivenUpAfterRetryFor(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.StartMailpit(t)
	mp.Stop()
	to := recipient("late")
	o.enqueue(mail.Message{To: to, Subject: "Late", Text: "late", Key: "late"})
	// Attempts come every Poll (200 ms) with a 100 ms backoff: a RetryFor
	// of two seconds leaves room for several even on a loaded machine,
	// where the first attempt may come late.
	w, m := o.worker(mp.SMTPURL(), func(opts *mail.Options) { opts.RetryFor = 2 * time.Second })
	run(t, w)
	testsvc.Eventually(t, 20*time.Second, "the message given up", func() bool { r := o.rows(to); return r[0].Status == "failed" })
	if r := o.rows(to); r[0].Attempts < 2 {
		t.Errorf("given up after %d attempts; want retries first", r[0].Attempts)
	}
	// The worker counts the attempt once its row is written: the test
	// may see the row first.
	givenUp := func() float64 { return testutil.ToFloat64(m.Attempts.WithLabelValues("given_up")) }
	testsvc.Eventually(t, 5*time.Second, "the attempt counted as given up", func() bool { return givenUp() >= 1 })
	if got := givenUp(); got != 1 {
		t.Errorf("given_up %v, want 1", got)
	}
}

// TestAuthFromURL: credentials in SEATD_SMTP_URL authenticate; over a
// connection without TLS the password is not sent in the clear unless
// the URL names the mechanism (?auth=plain, allowed to a loopback server
// only).
func TestAuthFromURL(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.StartMailpit(t, "--smtp-auth-accept-any", "--smtp-auth-allow-insecure")
	host := strings.TrimPrefix(mp.SMTPURL(), "smtp://")
	clear, plain := recipient("clear"), recipient("plain")
	o.enqueue(mail.Message{To: clear, Subject: "Auth", Text: "x", Key: "clear"})
	w, _ := o.worker("smtp://user:p%40ss@"+host, nil)
	if _, err := w.Once(context.Background()); err == nil || len(mp.To(clear)) != 0 {
		t.Fatalf("PLAIN offered over plain SMTP without ?auth: %v, %d sent; want no password in the clear", err, len(mp.To(clear)))
	}
	o.enqueue(mail.Message{To: plain, Subject: "Auth", Text: "x", Key: "plain"})
	w, _ = o.worker("smtp://user:p%40ss@"+host+"?auth=plain", func(opts *mail.Options) { opts.Backoff = time.Millisecond })
	run(t, w)
	testsvc.Eventually(t, 20*time.Second, "both messages sent with AUTH PLAIN", func() bool {
		return len(mp.To(plain)) == 1 && len(mp.To(clear)) == 1
	})
}

// TestEnqueueRefusesBadMessages: what an SMTP server or the outbox would
// refuse is refused at Enqueue, as invalid input.
func TestEnqueueRefusesBadMessages(t *testing.T) {
	t.Parallel()
	ok := mail.Message{To: "a@b.example", Subject: "S", Text: "t", Key: "k"}
	for name, mod := range map[string]func(*mail.Message){
		"no recipient": func(m *mail.Message) { m.To = "" },
		"display name": func(m *mail.Message) { m.To = "Ann <a@b.example>" },
		"two lines":    func(m *mail.Message) { m.Subject = "S\r\nBcc: x@y.example" },
		"no text":      func(m *mail.Message) { m.Text = "" },
		"no key":       func(m *mail.Message) { m.Key = "" },
		"bad type": func(m *mail.Message) {
			m.Attachments = []mail.Attachment{{Filename: "a", ContentType: "pdf", Data: []byte("x")}}
		},
		"header in name": func(m *mail.Message) { m.Attachments = []mail.Attachment{{Filename: "a\r\nb", ContentType: "a/b"}} },
		"too big": func(m *mail.Message) {
			m.Attachments = []mail.Attachment{{Filename: "a", ContentType: "a/b", Data: make([]byte, mail.MaxSize)}}
		},
		"content id bracket": func(m *mail.Message) {
			m.Attachments = []mail.Attachment{{Filename: "a", ContentType: "a/b", ContentID: "<x>"}}
		},
	} {
		msg := ok
		mod(&msg)
		err := mail.Enqueue(context.Background(), nil, uuid.New(), msg)
		if !errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

// TestSenderDefaults: without a sender of its own an organization's mail
// comes from SEATD_MAIL_FROM's address under the organization's name;
// SetSender refuses a bad address.
func TestSenderDefaults(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.MailpitFromEnv(t)
	if err := mail.SetSender(context.Background(), o.a.Pool, o.org, mail.Sender{Address: "not an address"}); !errors.Is(err, apperr.ErrInvalid) {
		t.Errorf("bad sender: %v", err)
	}
	to := recipient("sender")
	o.enqueue(mail.Message{To: to, Subject: "From", Text: "x", Key: "from"})
	w, _ := o.worker(mp.SMTPURL(), nil)
	if _, err := w.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := mp.To(to)
	var name string
	if err := o.a.Pool.QueryRow(context.Background(), `SELECT name FROM organizations WHERE id = $1`, o.org).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].From.Address != "tickets@seatd.example" || got[0].From.Name != name {
		t.Errorf("from %+v, want %s <tickets@seatd.example>", got, name)
	}
}

// TestWokenByEnqueue: a worker whose backstop poll is an hour away sends
// each message within seconds of its commit. The first may be found by
// the rounds a worker runs as it starts and once it listens; the second,
// sent once the first arrived, only by Enqueue's NOTIFY.
func TestWokenByEnqueue(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.MailpitFromEnv(t)
	w, _ := o.worker(mp.SMTPURL(), func(opts *mail.Options) { opts.Poll = time.Hour })
	run(t, w)
	for i := range 2 {
		to := recipient(fmt.Sprintf("woken%d", i))
		o.enqueue(mail.Message{To: to, Subject: "Woken", Text: "Sent on the announcement.", Key: "woken:" + to})
		testsvc.Eventually(t, 10*time.Second, "the message in Mailpit", func() bool { return len(mp.To(to)) == 1 })
	}
}

// TestRunStopsOnCancel: Run returns once its context ends.
func TestRunStopsOnCancel(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	w, _ := o.worker("smtp://127.0.0.1:1", nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestTemporaryRefusalRetried: a recipient refused for now (451) is tried
// again, not given up, and delivered once the server takes it.
func TestTemporaryRefusalRetried(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	mp := testsvc.StartMailpit(t, "--enable-chaos", "--chaos-triggers", "Recipient:451:100")
	to := recipient("later")
	o.enqueue(mail.Message{To: to, Subject: "Later", Text: "later", Key: "later"})
	w, _ := o.worker(mp.SMTPURL(), nil)
	run(t, w)
	testsvc.Eventually(t, 20*time.Second, "two refused attempts", func() bool {
		r := o.rows(to)
		return r[0].Status == "queued" && r[0].Attempts >= 2 && strings.Contains(r[0].LastError, "451")
	})
	mp.Chaos("Recipient", 451, 0)
	testsvc.Eventually(t, 20*time.Second, "the message sent", func() bool { return o.rows(to)[0].Status == "sent" })
	if n := len(mp.To(to)); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// stallingSMTP is an SMTP server on loopback that takes a session up to
// the message's data and never answers it; arrived receives once the data
// is being read.
func stallingSMTP(t *testing.T) (url string, arrived <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	got := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				_, _ = io.WriteString(c, "220 stalling ESMTP\r\n")
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
					case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
						_, _ = io.WriteString(c, "250 stalling\r\n")
					case strings.HasPrefix(cmd, "DATA"):
						_, _ = io.WriteString(c, "354 go on\r\n")
						select {
						case got <- struct{}{}:
						default:
						}
						_, _ = io.Copy(io.Discard, r) // never answers the data
						return
					case strings.HasPrefix(cmd, "QUIT"):
						_, _ = io.WriteString(c, "221 bye\r\n")
						return
					default:
						_, _ = io.WriteString(c, "250 ok\r\n")
					}
				}
			}()
		}
	}()
	return "smtp://" + ln.Addr().String(), got
}

// TestShutdownReleasesMessageInFlight: a worker stopped while the server
// has not yet answered a message's data counts no attempt: the message is
// queued and due at once, with no error and no backoff, and the next
// worker sends it.
func TestShutdownReleasesMessageInFlight(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	url, arrived := stallingSMTP(t)
	to := recipient("shutdown")
	o.enqueue(mail.Message{To: to, Subject: "Stopped", Text: "sent after the shutdown", Key: "shutdown:" + to})
	w, _ := o.worker(url, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the message's data never reached the server")
	}
	cancel()
	<-done
	if r := o.rows(to); len(r) != 1 || r[0].Status != "queued" || r[0].Attempts != 0 || r[0].LastError != "" || !r[0].Due {
		t.Fatalf("after the shutdown: %+v; want it queued, due, with no attempt counted", r)
	}
	mp := testsvc.MailpitFromEnv(t)
	next, _ := o.worker(mp.SMTPURL(), nil)
	if n, err := next.Once(context.Background()); err != nil || n != 1 {
		t.Fatalf("the next worker's round: %d claimed, %v", n, err)
	}
	if r := o.rows(to); r[0].Status != "sent" || len(mp.To(to)) != 1 {
		t.Fatalf("after the next round: %+v, %d in Mailpit; want it sent once", r, len(mp.To(to)))
	}
}
