package api

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"seatd/internal/hold"
)

// RegistryFlights bounds what an event's registry checks and reconciles
// cost, whoever asks and however often. Each reads every active hold of
// the event from Postgres and Redis; a reconcile also rewrites the
// event's Redis state. Per (organization, event):
//
//   - single flight: callers that ask while a call runs wait for it and
//     share its answer;
//   - cooldown: within the cooldown of the last answer, a caller gets that
//     answer again (with the time it was taken) instead of a new call. A
//     reconcile clicked again within `cooldown` (SEATD_REGISTRY_COOLDOWN)
//     is not run twice: the second click gets the first one's result.
//     Checks have a cooldown of checkCooldown only, so "check again" soon
//     shows a change; a reconcile's result is also the latest check.
//
// The routes that use it (the API's and the dashboard's) are the
// organizer's, and the key includes the organization, so a shared answer
// never crosses tenants or roles.
type RegistryFlights struct {
	core     RegistryCore
	cooldown time.Duration
	now      func() time.Time
	g        singleflight.Group

	mu        sync.Mutex
	checks    map[[2]uuid.UUID]registryAnswer
	reconcile map[[2]uuid.UUID]registryAnswer
}

// RegistryCore is what RegistryFlights needs of the hold core;
// *hold.Monitor satisfies it.
type RegistryCore interface {
	RegistryStatus(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Registry, error)
	Reconcile(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Registry, error)
}

// registryAnswer is a registry call's result and when it was taken.
type registryAnswer struct {
	reg hold.Registry
	at  time.Time
}

// checkCooldown is how long a registry check's answer is given again.
const checkCooldown = time.Second

// registryCallTimeout bounds a shared call: it runs for every caller
// waiting, so no one caller's cancellation ends it.
const registryCallTimeout = 30 * time.Second

// NewRegistryFlights returns the bounded registry calls of core, a
// reconcile at most once per cooldown.
func NewRegistryFlights(core RegistryCore, cooldown time.Duration) *RegistryFlights {
	return &RegistryFlights{core: core, cooldown: cooldown, now: time.Now,
		checks: map[[2]uuid.UUID]registryAnswer{}, reconcile: map[[2]uuid.UUID]registryAnswer{}}
}

// Status answers the event's registry check and when it was taken.
func (f *RegistryFlights) Status(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Registry, time.Time, error) {
	return f.do(ctx, "check", checkCooldown, a, event, f.checks, func(ctx context.Context) (hold.Registry, error) {
		return f.core.RegistryStatus(ctx, a, event)
	})
}

// Reconciled rebuilds the event's Redis state and caches from Postgres, at
// most once per cooldown, and answers the result and when it was taken.
func (f *RegistryFlights) Reconciled(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Registry, time.Time, error) {
	return f.do(ctx, "reconcile", f.cooldown, a, event, f.reconcile, func(ctx context.Context) (hold.Registry, error) {
		return f.core.Reconcile(ctx, a, event)
	})
}

func (f *RegistryFlights) do(ctx context.Context, kind string, cooldown time.Duration, a hold.Actor, event uuid.UUID,
	last map[[2]uuid.UUID]registryAnswer, call func(context.Context) (hold.Registry, error)) (hold.Registry, time.Time, error) {
	key := [2]uuid.UUID{a.Org, event}
	if ans, ok := f.recent(last, key, cooldown); ok {
		return ans.reg, ans.at, nil
	}
	ch := f.g.DoChan(kind+":"+a.Org.String()+":"+event.String(), func() (any, error) {
		// Another flight may have finished between recent and here.
		if ans, ok := f.recent(last, key, cooldown); ok {
			return ans, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registryCallTimeout)
		defer cancel()
		reg, err := call(ctx)
		if err != nil {
			return nil, err
		}
		ans := registryAnswer{reg: reg, at: f.now()}
		f.mu.Lock()
		last[key] = ans
		f.checks[key] = ans // a reconcile ends with a fresh check
		f.mu.Unlock()
		return ans, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return hold.Registry{}, time.Time{}, res.Err
		}
		ans := res.Val.(registryAnswer)
		return ans.reg, ans.at, nil
	case <-ctx.Done():
		return hold.Registry{}, time.Time{}, ctx.Err()
	}
}

// recent returns the last answer if it is within the cooldown, and drops
// answers past it (so the maps hold only events asked about lately).
func (f *RegistryFlights) recent(last map[[2]uuid.UUID]registryAnswer, key [2]uuid.UUID, cooldown time.Duration) (registryAnswer, bool) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	ans, ok := last[key]
	if ok && now.Sub(ans.at) < cooldown {
		return ans, true
	}
	if ok {
		delete(last, key)
	}
	return registryAnswer{}, false
}
