package app

import (
	"context"
	"time"

	"seatd/internal/mail"
	"seatd/internal/telemetry"
)

// newMail builds the mail worker (nil without SEATD_SMTP_URL: mail then
// stays in the outbox) and registers the mail metrics, which report the
// outbox either way.
func (a *App) newMail() error {
	m := telemetry.NewMail(a.Registry, func() (telemetry.MailQueue, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		depth, oldest, err := mail.Queue(ctx, a.Pool)
		return telemetry.MailQueue{Depth: depth, Oldest: oldest}, err == nil
	})
	if a.Cfg.SMTPURL == "" {
		a.Log.Info("SEATD_SMTP_URL is not set: mail stays queued in the outbox until a process with it runs")
		return nil
	}
	srv, err := mail.ParseURL(a.Cfg.SMTPURL)
	if err != nil {
		return err
	}
	o := mail.DefaultOptions()
	o.From, _ = a.Cfg.Sender() // validated by config.Load
	o.Poll, o.RetryFor = a.Cfg.MailPoll, a.Cfg.MailRetryFor
	a.Mail = mail.NewWorker(a.Pool, srv, a.Notifier, o, a.Log.With("component", "mail"), m)
	return nil
}
