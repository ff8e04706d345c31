package render

import (
	"time"

	"seatd/internal/store"
	"seatd/views"
)

// Events is the events list both the buyers' and the organizer's pages
// show.
func Events(evs []store.Event) []views.Event {
	out := make([]views.Event, len(evs))
	for i, e := range evs {
		out[i] = views.Event{ID: e.ID.String(), Name: e.Name, Venue: e.Venue, StartsAt: e.StartsAt.In(VenueTime(e)),
			Seats: e.Seats, Status: string(e.Status)}
	}
	return out
}

// VenueTime is the event's time zone (UTC if it is unknown here).
func VenueTime(e store.Event) *time.Location {
	if loc, err := time.LoadLocation(e.TimeZone); err == nil {
		return loc
	}
	return time.UTC
}

// WaitEntry is a waitlist entry as the buyer's and the staff's panels show
// it.
func WaitEntry(e store.WaitlistEntry) views.WaitEntry {
	return views.WaitEntry{ID: e.ID.String(), Seats: e.Seats, Category: e.Category, Section: e.SectionLabel,
		Accessible: e.Accessible, Status: e.Status, Position: e.Position, OfferUntil: e.OfferUntil}
}
