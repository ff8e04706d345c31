// Package seed creates demo data: organizations, users of every role and
// an event with a seated venue.
package seed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/auth"
	"seatd/internal/chart"
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
	{"door", "door"},
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
		org, err := st.Accounts.OrgBySlug(ctx, slug)
		if errors.Is(err, apperr.ErrNotFound) {
			org, err = st.Accounts.CreateOrg(ctx, slug, orgName(slug))
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
		events, err := st.Events.List(ctx, org.ID)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			ev, err := demoEvent(ctx, st, org.ID, orgName(slug))
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

// DemoChart is the demo venue as a chart: the layout of DemoVenue with
// three price categories — the front ten rows of the orchestra centre,
// the rest of the orchestra, and the balcony — and a standing section.
func DemoChart(name string) chart.Chart {
	c := chart.Chart{Name: name, Categories: []chart.Category{
		{Key: "premium", Name: "Premium", Color: "#b45309"},
		{Key: "stalls", Name: "Stalls", Color: "#2563eb"},
		{Key: "balcony", Name: "Balcony", Color: "#059669"},
	}}
	for _, sec := range DemoVenue() {
		cs := chart.Section{Label: sec.Label, Name: sec.Name, Kind: chart.Seated}
		for _, st := range sec.Seats {
			if len(cs.Rows) == 0 || cs.Rows[len(cs.Rows)-1].Label != st.Row {
				cs.Rows = append(cs.Rows, chart.Row{Label: st.Row})
			}
			cat := "stalls"
			switch {
			case sec.Label == "D":
				cat = "balcony"
			case sec.Label == "B" && len(cs.Rows) <= 10:
				cat = "premium"
			}
			r := &cs.Rows[len(cs.Rows)-1]
			r.Seats = append(r.Seats, chart.Seat{Number: st.Number, X: st.X, Y: st.Y, Category: cat})
		}
		c.Sections = append(c.Sections, cs)
	}
	// And standing room: 300 general-admission places at the stalls price.
	c.Sections = append(c.Sections, chart.Section{Label: "GA", Name: "Standing", Kind: chart.GA, Capacity: 300, Category: "stalls"})
	return c
}

// DemoPrices are the demo event's prices.
var DemoPrices = []store.Price{
	{Category: "premium", PriceMinor: 8500, Currency: "EUR"},
	{Category: "stalls", PriceMinor: 5500, Currency: "EUR"},
	{Category: "balcony", PriceMinor: 3000, Currency: "EUR"},
}

// demoEvent makes the demo event the way an organizer does: a chart, an
// event from it with prices, published, on sale until the show starts.
func demoEvent(ctx context.Context, st *store.Store, org uuid.UUID, name string) (store.Event, error) {
	v, err := st.Charts.Save(ctx, org, uuid.Nil, DemoChart("Main Hall"))
	if err != nil {
		return store.Event{}, err
	}
	now := time.Now().UTC().Truncate(time.Minute)
	start := now.AddDate(0, 1, 0).Truncate(time.Hour)
	spec := store.EventSpec{Name: name + " Gala Night", Venue: "Main Hall", StartsAt: start, TimeZone: "Europe/Paris",
		OnSaleAt: &now, SalesEndAt: &start, OrphanRule: "off"}
	ev, err := st.Events.CreateFromChart(ctx, org, uuid.Nil, v, spec, DemoPrices)
	if err != nil {
		return store.Event{}, err
	}
	return st.Events.Update(ctx, org, ev.ID, uuid.Nil, func(cur store.Event) (store.EventUpdate, error) {
		return store.EventUpdate{Spec: cur.EventSpec, From: store.EventDraft, To: store.EventOnSale}, nil
	})
}
