// Package seed creates demo data: organizations, users of every role and
// an event with a seated venue.
package seed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"seatd/internal/apperr"
	"seatd/internal/auth"
	"seatd/internal/store"
)

// DemoPassword is the password of every demo account.
const DemoPassword = "demo-password"

// DemoOrgs are the demo organizations' slugs.
var DemoOrgs = []string{"demo", "acme"}

// DemoRoles are the demo accounts' roles, each <role-name>@<slug>.example.
var DemoRoles = []struct{ Local, Role string }{
	{"organizer", "organizer"},
	{"boxoffice", "box_office"},
	{"buyer", "buyer"},
}

// DemoVenue is the demo event's layout: three orchestra sections side by
// side and a wide balcony behind them (2 850 seats).
func DemoVenue() []store.NewSection {
	return []store.NewSection{
		store.GridSection("A", "Orchestra left", 25, 30, 0, 0),
		store.GridSection("B", "Orchestra centre", 25, 30, 32, 0),
		store.GridSection("C", "Orchestra right", 25, 30, 64, 0),
		store.GridSection("D", "Balcony", 10, 60, 17, 28),
	}
}

// Demo creates the demo organizations, users and events, skipping what
// exists already, and reports progress to w.
func Demo(ctx context.Context, st *store.Store, acc *auth.Accounts, w io.Writer) error {
	for _, slug := range DemoOrgs {
		org, err := st.OrgBySlug(ctx, slug)
		if errors.Is(err, apperr.ErrNotFound) {
			org, err = st.CreateOrg(ctx, slug, orgName(slug))
		}
		if err != nil {
			return fmt.Errorf("organization %s: %w", slug, err)
		}
		for _, r := range DemoRoles {
			email := r.Local + "@" + slug + ".example"
			if _, err := acc.Create(ctx, org.ID, email, DemoPassword, r.Role); err != nil && !errors.Is(err, apperr.ErrConflict) {
				return fmt.Errorf("user %s: %w", email, err)
			}
		}
		events, err := st.Events(ctx, org.ID)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			start := time.Now().UTC().AddDate(0, 1, 0).Truncate(time.Hour)
			ev, err := st.CreateEvent(ctx, org.ID, orgName(slug)+" Gala Night", "Main Hall", start, DemoVenue())
			if err != nil {
				return fmt.Errorf("event: %w", err)
			}
			_, _ = fmt.Fprintf(w, "seeded %s: event %q with %d seats\n", slug, ev.Name, ev.Seats)
		} else {
			_, _ = fmt.Fprintf(w, "seeded %s: events exist already, left as they are\n", slug)
		}
	}
	return nil
}

func orgName(slug string) string {
	switch slug {
	case "demo":
		return "Demo Theatre"
	case "acme":
		return "Acme Concerts"
	}
	return slug
}
