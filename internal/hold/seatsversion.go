package hold

import (
	"context"

	"github.com/google/uuid"
)

// SeatsVersion is a version of an event's seats as this process's hot
// cache has them: it changes whenever the cache applies a change a seat
// list would show (from this process, another one's message, or the
// change feed), and only then; one value names one state of the seats,
// across a reload of the event too (see eventState.seatsVer). It costs one atomic read, so a
// reader can tell whether an answer it built earlier is still current
// without building it again. The tenancy gate applies.
func (es *Events) SeatsVersion(ctx context.Context, a Actor, event uuid.UUID) (int64, error) {
	ev, err := es.e.event(ctx, a.Org, event)
	if err != nil {
		return 0, err
	}
	return ev.seatsVer.Load(), nil
}
