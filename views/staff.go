package views

import (
	"context"
	"time"
)

// What every staff page shares: the event in the navigation bar and
// wording helpers.

// EventNav names the event a staff page is about, for the navigation bar.
type EventNav struct {
	ID string
}

type eventNavKey struct{}

// WithEventNav returns ctx carrying the event the page is about; Layout
// then links the event's staff pages.
func WithEventNav(ctx context.Context, e EventNav) context.Context {
	return context.WithValue(ctx, eventNavKey{}, e)
}

func hasEventNav(ctx context.Context) bool {
	_, ok := ctx.Value(eventNavKey{}).(EventNav)
	return ok
}

func eventNavOf(ctx context.Context) EventNav {
	e, _ := ctx.Value(eventNavKey{}).(EventNav)
	return e
}

// plural picks the singular or plural phrase for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05") }
