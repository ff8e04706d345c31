package door

import (
	"context"

	"github.com/google/uuid"

	"seatd/internal/hold"
)

// Live is the live bus on which a door announces admissions and the
// dashboards' hub hears them, in every process (*realtime.Bus).
type Live interface {
	Publish(ctx context.Context, channel string, payload []byte) error
	Subscribe(name string, h func(payload []byte), resync func()) (unsubscribe func())
}

// admissionsChannel is the event's channel of admissions, under its hash
// tag {org:event} like its other keys.
func (d *Door) admissionsChannel(org, event uuid.UUID) string {
	return d.opts.KeyPrefix + ":{" + org.String() + ":" + event.String() + "}:admitted"
}

// announce tells the event's dashboards that r admitted someone. It
// carries no figures: a dashboard reads them when told, so announcements
// lost or merged cost nothing but freshness until the next one (or the
// dashboard's reconnect, which reads them again). A failure to publish is
// not the scan's failure: the admission is recorded.
func (d *Door) announce(ctx context.Context, org, event uuid.UUID, r Result) {
	if d.opts.Live == nil || r.Outcome != Admitted {
		return
	}
	_ = d.opts.Live.Publish(context.WithoutCancel(ctx), d.admissionsChannel(org, event), []byte("1"))
}

// WatchAdmissions calls f after every admission to the event, in any
// process, and after the bus reconnected (when some may have been
// missed), until the returned function is called (live.DoorSource). The
// hub checked the event is a.Org's.
func (d *Door) WatchAdmissions(_ context.Context, a hold.Actor, event uuid.UUID, f func()) (func(), error) {
	if d.opts.Live == nil {
		return func() {}, nil
	}
	return d.opts.Live.Subscribe(d.admissionsChannel(a.Org, event), func([]byte) { f() }, f), nil
}
