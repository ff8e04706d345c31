package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"

	"seatd/internal/app"
	"seatd/internal/config"
	"seatd/internal/mail"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// metric is the value of a gauge or counter the app exports, with the
// given label value if any (false when it is not exported).
func metric(t *testing.T, a *app.App, name, label string) (float64, bool) {
	t.Helper()
	mfs, err := a.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && !hasLabel(m, label) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func hasLabel(m *dto.Metric, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetValue() == v {
			return true
		}
	}
	return false
}

// TestBackgroundSendsMail: with SEATD_SMTP_URL the app's background loops
// run a mail worker that sends what a transaction enqueued, and the
// queue's metrics are exported.
func TestBackgroundSendsMail(t *testing.T) {
	t.Parallel()
	mp := testsvc.MailpitFromEnv(t)
	db := testsvc.OwnDatabase(t, "app_mail_sent")
	a := testenv.App(t, func(c *config.Config) { c.DatabaseURL, c.MailPoll = db, 500*time.Millisecond })
	if a.Mail == nil {
		t.Fatal("no mail worker with SEATD_SMTP_URL set")
	}
	org := testenv.NewTenant(t, a, 0).Org.ID
	testenv.Background(t, a)
	to := "app-" + uuid.NewString()[:8] + "@buyers.example"
	if err := mail.Enqueue(context.Background(), a.Pool, org, mail.Message{To: to, Subject: "Hello", Text: "hello", Key: "hello"}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 20*time.Second, "the message in Mailpit", func() bool { return len(mp.To(to)) == 1 })
	testsvc.Eventually(t, 10*time.Second, "the metrics", func() bool {
		sent, _ := metric(t, a, "seatd_mail_attempts_total", "sent")
		depth, ok := metric(t, a, "seatd_mail_queue_depth", "")
		return sent == 1 && ok && depth == 0
	})
}

// TestMailStaysQueuedWithoutSMTP: without SEATD_SMTP_URL (development,
// test) there is no worker; mail waits in the outbox, and the metrics say
// how much and for how long.
func TestMailStaysQueuedWithoutSMTP(t *testing.T) {
	t.Parallel()
	db := testsvc.OwnDatabase(t, "app_mail_queued")
	a := testenv.App(t, func(c *config.Config) { c.DatabaseURL, c.SMTPURL = db, "" })
	if a.Mail != nil {
		t.Fatal("a mail worker without SEATD_SMTP_URL")
	}
	org := testenv.NewTenant(t, a, 0).Org.ID
	testenv.Background(t, a)
	if err := mail.Enqueue(context.Background(), a.Pool, org, mail.Message{To: "q@buyers.example", Subject: "Q", Text: "q", Key: "q"}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 10*time.Second, "a message queued for a while", func() bool {
		depth, _ := metric(t, a, "seatd_mail_queue_depth", "")
		age, _ := metric(t, a, "seatd_mail_oldest_queued_age_seconds", "")
		return depth == 1 && age > 0.2
	})
}

// TestBadSMTPURL: a malformed SEATD_SMTP_URL stops the app from being
// built, naming the variable and not the password.
func TestBadSMTPURL(t *testing.T) {
	t.Parallel()
	cfg := testsvc.Config(t)
	cfg.SMTPURL = "smtp://u:secret-pw@mail.example?tls=yes"
	_, err := app.New(context.Background(), cfg, testsvc.Logger(t))
	if err == nil || !strings.Contains(err.Error(), "SEATD_SMTP_URL") || strings.Contains(err.Error(), "secret-pw") {
		t.Fatalf("app.New: %v, want an error naming SEATD_SMTP_URL without the password", err)
	}
}
