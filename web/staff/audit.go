package staff

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
)

// AuditLog reads an event's audit log; *store.Audit satisfies it.
type AuditLog interface {
	Log(ctx context.Context, org, event uuid.UUID, f store.AuditFilter) ([]store.AuditEntry, error)
	SeatByLabel(ctx context.Context, org, event uuid.UUID, label string) (uuid.UUID, error)
}

// Users finds an account by email; *store.Accounts satisfies it.
type Users interface {
	UserByEmail(ctx context.Context, org uuid.UUID, email string) (store.User, error)
}

// Audit is an event's audit log page.
type Audit struct {
	*frame
	audit AuditLog
	users Users
}

const (
	// auditPageSize is the number of audit entries per page.
	auditPageSize = 50
)

// Page is a page of an event's audit log, filtered by seat, account or
// action, newest first.
func (p *Audit) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	ctx := r.Context()
	q := r.URL.Query()
	l := views.AuditLog{EventID: ev.ID.String(), EventName: ev.Name, Actions: store.AuditActions,
		Filter: views.AuditFilter{Seat: strings.TrimSpace(q.Get("seat")), Email: strings.ToLower(strings.TrimSpace(q.Get("email"))),
			Action: q.Get("action")}}
	if len(l.Filter.Seat) > 40 || len(l.Filter.Email) > 254 || !utf8.ValidString(l.Filter.Seat+l.Filter.Email) {
		return apperr.E(apperr.Invalid, "the filter is too long")
	}
	if l.Filter.Action != "" && !slices.Contains(store.AuditActions, l.Filter.Action) {
		return apperr.E(apperr.Invalid, "unknown action %q", l.Filter.Action)
	}
	f := store.AuditFilter{Action: l.Filter.Action, Limit: auditPageSize + 1}
	if b := q.Get("before"); b != "" {
		if f.Before, err = strconv.ParseInt(b, 10, 64); err != nil || f.Before <= 0 {
			return apperr.E(apperr.Invalid, "before must be a positive entry id")
		}
	}
	l.First = f.Before == 0
	if l.Filter.Seat != "" {
		if f.Seat, err = p.audit.SeatByLabel(ctx, a.Org, ev.ID, l.Filter.Seat); err != nil {
			if apperr.CodeOf(err) != apperr.NotFound {
				return err
			}
			l.Message = "This event has no seat " + l.Filter.Seat + " (seats are named section-row-number, like B-A-12)."
		}
	}
	if l.Filter.Email != "" && l.Message == "" {
		u, err := p.users.UserByEmail(ctx, a.Org, l.Filter.Email)
		if err != nil {
			if apperr.CodeOf(err) != apperr.NotFound {
				return err
			}
			l.Message = "No account with the email " + l.Filter.Email + " in this organization."
		}
		f.User = u.ID
	}
	if l.Message == "" {
		es, err := p.audit.Log(ctx, a.Org, ev.ID, f)
		if err != nil {
			return err
		}
		if len(es) > auditPageSize {
			es = es[:auditPageSize]
			l.Older = "/admin/events/" + ev.ID.String() + "/audit" + l.Filter.Query(strconv.FormatInt(es[len(es)-1].ID, 10))
		}
		for _, e := range es {
			l.Rows = append(l.Rows, views.AuditRow{ID: e.ID, At: e.At, Action: e.Action, Actor: e.Actor, Holder: e.Holder,
				Seat: e.Seat, Reason: e.Reason})
		}
	}
	p.page(w, r, ev, views.AuditPage(p.render.Meta(r, ev.Name+" · audit log"), l))
	return nil
}
