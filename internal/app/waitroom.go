package app

// The waiting room's admitter and what it reads of the events
// (docs/waiting-room.md).

import (
	"context"
	"log/slog"
	"time"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/waitroom"
)

// newWaitroom builds the waiting line and the admitter, which sets the
// automatic rooms' rate with a.AutoRate (read from the hold-latency
// histogram).
func (a *App) newWaitroom() {
	a.Line = waitroom.NewLine(a.Redis, a.Cfg.KeyPrefix, a.Cfg.QueueAdmission)
	src := &openRooms{events: a.Store.Events, occupancy: a.Monitor, settings: a.Events, line: a.Line,
		log: a.Log.With("component", "waitroom")}
	a.Admitter = waitroom.NewAdmitter(a.Line, src, a.AutoRate, src.log, time.Second)
}

// openRooms lists the rooms that are on, with the seats each event has
// left, and turns off the room of an event that sold out: nobody is let
// in to a map with nothing on it, and its line is cleared.
type openRooms struct {
	events    *store.Events
	occupancy *hold.Monitor
	settings  *hold.Events
	line      *waitroom.Line
	log       *slog.Logger
}

func (o *openRooms) OpenRooms(ctx context.Context) ([]waitroom.OpenRoom, error) {
	rows, err := o.events.OpenWaitingRooms(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]waitroom.OpenRoom, 0, len(rows))
	for _, r := range rows {
		if r.Room.OpensAt == nil {
			continue
		}
		// The admitter reads as the event's organizer would; no person
		// acts, so the audit log names nobody.
		staff := hold.Actor{Org: r.Org, Role: hold.RoleOrganizer}
		room := waitroom.OpenRoom{Room: waitroom.Room{Org: r.Org, Event: r.Event, OpensAt: *r.Room.OpensAt,
			RatePerMinute: r.Room.RatePerMinute}, SeatsLeft: -1}
		occ, err := o.occupancy.Occupancy(ctx, staff, r.Event)
		switch {
		case err != nil:
			// Without the counts the room still admits at its rate,
			// without the cap.
			o.log.Warn("waiting room: no occupancy", "org", r.Org, "event", r.Event, "err", err)
		case occ.Available == 0 && occ.Held == 0:
			o.soldOut(ctx, staff, r)
			continue
		default:
			room.SeatsLeft = occ.Available
		}
		out = append(out, room)
	}
	return out, nil
}

func (o *openRooms) soldOut(ctx context.Context, staff hold.Actor, r store.OpenWaitingRoom) {
	off := false
	if _, err := o.settings.Update(ctx, staff, r.Event, hold.EventInput{WaitingRoom: &hold.WaitingRoomInput{Enabled: &off}}); err != nil {
		o.log.Warn("waiting room: turning off a sold-out event's room", "org", r.Org, "event", r.Event, "err", err)
		return
	}
	if err := o.line.Clear(ctx, r.Org, r.Event); err != nil {
		o.log.Warn("waiting room: clearing a sold-out event's line", "org", r.Org, "event", r.Event, "err", err)
	}
	o.log.Info("waiting room turned off: the event sold out", "org", r.Org, "event", r.Event)
}
