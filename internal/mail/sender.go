package mail

import (
	"context"
	"fmt"
	netmail "net/mail"
	"strings"

	"github.com/google/uuid"

	"seatd/internal/apperr"
)

// Sender is who an organization's mail comes from. An empty Address takes
// the default sender's (SEATD_MAIL_FROM); an empty Name takes the
// organization's name, which is what buyers know it by.
type Sender struct {
	Address string
	Name    string
}

// SetSender sets org's sender; the zero Sender goes back to the default.
// It applies to mail sent from now on, queued mail included.
func SetSender(ctx context.Context, db DBTX, org uuid.UUID, s Sender) error {
	if s.Address != "" {
		if a, err := netmail.ParseAddress(s.Address); err != nil || a.Address != s.Address || len(s.Address) > 254 {
			return &apperr.Error{Code: apperr.Invalid, Message: "mail: sender address is not an email address",
				Fields: map[string]string{"address": "is not an email address"}}
		}
	}
	if len(s.Name) > 200 || strings.ContainsAny(s.Name, "\r\n") {
		return &apperr.Error{Code: apperr.Invalid, Message: "mail: sender name must be one line of at most 200 bytes",
			Fields: map[string]string{"name": "must be one line of at most 200 bytes"}}
	}
	tag, err := db.Exec(ctx, `UPDATE organizations SET mail_from_address = NULLIF($2, ''), mail_from_name = NULLIF($3, '')
		WHERE id = $1`, org, s.Address, s.Name)
	if err != nil {
		return fmt.Errorf("set mail sender: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return apperr.ErrNotFound
	}
	return nil
}

// from is the From address of a message of an organization named orgName
// whose sender is s, with def (SEATD_MAIL_FROM) filling in what s lacks.
func from(s Sender, orgName string, def netmail.Address) *netmail.Address {
	a := &netmail.Address{Address: s.Address, Name: s.Name}
	if a.Address == "" {
		a.Address = def.Address
	}
	if a.Name == "" {
		a.Name = orgName
	}
	if a.Name == "" {
		a.Name = def.Name
	}
	return a
}
