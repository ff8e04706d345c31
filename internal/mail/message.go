// Package mail sends seatd's email through a Postgres outbox.
//
// A use case that sends mail (a sale's confirmation, a cancellation, a
// sign-up's verification link) calls Enqueue with its own transaction:
// the message is written with the change that caused it, so a rolled-back
// change sends nothing and a committed one cannot lose its mail. A Worker
// in every process claims due messages (FOR UPDATE SKIP LOCKED, so any
// number of processes share the outbox), sends them over SMTP, and retries
// failures with backoff until Options.RetryFor has passed.
//
// Delivery is at least once; see Worker for the one window in which a
// message can be sent twice.
package mail

import (
	"context"
	"fmt"
	netmail "net/mail"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"seatd/internal/apperr"
)

// DBTX is what Enqueue needs of Postgres; a pool and a transaction both
// satisfy it, so a caller enqueues inside the transaction it commits.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Channel is the Postgres NOTIFY channel Enqueue announces new mail on;
// every process's Worker wakes on it.
const Channel = "seatd_mail"

// Limits of a message. MaxSize counts the bodies and attachments: mail
// providers refuse messages of 10–25 MB after encoding (base64 adds a
// third), so 10 MB of content stays under the usual limits.
const (
	MaxSize        = 10 << 20
	MaxAttachments = 20
)

// Message is one email to one recipient.
type Message struct {
	// To is the recipient's address (user@example.com, no display name).
	To      string
	Subject string
	// Text is the plain-text part (required); HTML the HTML part, if any
	// (views/email renders both from one templ component).
	Text string
	HTML string
	// Attachments are files and inline images, in order.
	Attachments []Attachment
	// Key identifies the message within its organization: a second
	// Enqueue with the same key is a no-op, so the use case that sends it
	// may be retried ("booking:<id>:confirmation", "verify:<token id>").
	Key string
}

// Attachment is a file attached to a message, or an inline image.
type Attachment struct {
	// Filename is the name the reader sees ("tickets.pdf").
	Filename string
	// ContentType is its MIME type ("application/pdf", "image/png").
	ContentType string
	// ContentID makes it an inline image that the HTML part shows with
	// <img src="cid:CONTENT-ID"> (a QR code); empty for an attachment.
	ContentID string
	Data      []byte
}

// Enqueue writes msg to the outbox of org through db — the caller's
// transaction, so the message is sent only if that transaction commits —
// and announces it on Channel in the same transaction (Postgres delivers
// the NOTIFY at commit). A message whose Key org already used is not
// written again; Enqueue returns nil for it.
func Enqueue(ctx context.Context, db DBTX, org uuid.UUID, msg Message) error {
	if err := msg.validate(); err != nil {
		return err
	}
	n := len(msg.Attachments)
	names, types, cids, data := make([]string, n), make([]string, n), make([]*string, n), make([][]byte, n)
	for i, a := range msg.Attachments {
		names[i], types[i], data[i] = a.Filename, a.ContentType, a.Data
		if a.ContentID != "" {
			cids[i] = &a.ContentID
		}
	}
	// One statement: the message, its attachments and the announcement
	// (only when the message is new). ON CONFLICT waits for a concurrent
	// transaction that wrote the same key, and writes nothing if it
	// committed.
	_, err := db.Exec(ctx, `
		WITH m AS (
			INSERT INTO mail_outbox (org_id, dedupe_key, recipient, subject, text_body, html_body)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (org_id, dedupe_key) DO NOTHING
			RETURNING org_id, id
		), a AS (
			INSERT INTO mail_attachments (org_id, mail_id, position, filename, content_type, content_id, data)
			SELECT m.org_id, m.id, f.ord, f.filename, f.content_type, f.content_id, f.data
			FROM m, unnest($7::text[], $8::text[], $9::text[], $10::bytea[]) WITH ORDINALITY
				AS f (filename, content_type, content_id, data, ord)
		)
		SELECT pg_notify($11, '') FROM m`,
		org, msg.Key, msg.To, msg.Subject, msg.Text, msg.HTML, names, types, cids, data, Channel)
	if err != nil {
		return fmt.Errorf("enqueue mail %q: %w", msg.Key, err)
	}
	return nil
}

// validate refuses what the outbox or an SMTP server would: a bad
// recipient (callers pass addresses people typed), header injection,
// missing parts, oversize content.
func (msg Message) validate() error {
	bad := func(field, why string) error {
		return &apperr.Error{Code: apperr.Invalid, Message: "mail: " + field + " " + why, Fields: map[string]string{field: why}}
	}
	if a, err := netmail.ParseAddress(msg.To); err != nil || a.Address != msg.To || len(msg.To) > 254 {
		return bad("to", "is not an email address")
	}
	switch {
	case strings.TrimSpace(msg.Subject) == "" || len(msg.Subject) > 500 || strings.ContainsAny(msg.Subject, "\r\n"):
		return bad("subject", "must be one line of 1 to 500 bytes")
	case msg.Text == "":
		return bad("text", "is required (the plain-text part)")
	case msg.Key == "" || len(msg.Key) > 200:
		return bad("key", "must be 1 to 200 bytes")
	case len(msg.Attachments) > MaxAttachments:
		return bad("attachments", fmt.Sprintf("at most %d", MaxAttachments))
	}
	size := len(msg.Text) + len(msg.HTML)
	for _, a := range msg.Attachments {
		size += len(a.Data)
		switch {
		case a.Filename == "" || len(a.Filename) > 200 || strings.ContainsAny(a.Filename, "\r\n\"/\\"):
			return bad("attachments", "need a file name of 1 to 200 bytes without quotes, slashes or line breaks")
		case !validContentType(a.ContentType):
			return bad("attachments", "need a MIME type such as application/pdf")
		case len(a.ContentID) > 200 || strings.ContainsAny(a.ContentID, "<>\r\n \""):
			return bad("attachments", "content id must be 1 to 200 bytes without <>, quotes, spaces or line breaks")
		}
	}
	if size > MaxSize {
		return bad("attachments", fmt.Sprintf("the message is %d bytes, over %d", size, MaxSize))
	}
	return nil
}

// validContentType accepts type/subtype of token characters, nothing
// else (no parameters, no line breaks into the header).
func validContentType(s string) bool {
	typ, sub, ok := strings.Cut(s, "/")
	token := func(t string) bool {
		if t == "" || len(t) > 100 {
			return false
		}
		for _, r := range t {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$&^_.+-", r)) {
				return false
			}
		}
		return true
	}
	return ok && token(typ) && token(sub)
}
