package hold

import (
	"context"

	"github.com/google/uuid"
)

// SeatsVersion is a version of an event's seats as this process's hot
// cache has them: the sum of the seats' versions. Every change of a seat
// raises its version and the cache applies only newer ones, so the sum
// only grows, and it moves with every change a seat list would show. It
// walks the seats in place (no copy), so a reader can tell whether an
// answer it built earlier is still current without building it again.
// The tenancy gate applies.
func (es *Events) SeatsVersion(ctx context.Context, a Actor, event uuid.UUID) (int64, error) {
	ev, err := es.e.event(ctx, a.Org, event)
	if err != nil {
		return 0, err
	}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	var v int64
	for i := range ev.all {
		v += ev.all[i].Version
	}
	return v, nil
}
