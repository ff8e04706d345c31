// Package hold is the hold core: the rules for holding, releasing,
// extending, buying and blocking seats, across three tiers — this
// process's hot cache, Redis locks, and Postgres, which alone decides
// (docs/architecture.md#the-hold-algorithm). It knows nothing of HTTP;
// pages, the JSON API, sockets and the CLI all call the same methods.
//
// One Engine per process owns the shared state: the events' hot caches,
// the Redis tier and its breaker, commit and publish. Each job is a type
// of its own around it:
//
//	Holds      making a hold (Hold, one Request for every kind), release,
//	           checkout, purchase, blocking seats
//	BoxOffice  counter sales, bookings, cancellations, house seats
//	Events     creating and changing events, their settings and seat maps
//	Waitlist   the line and its offer rounds
//	Monitor    occupancy, snapshots, the tiers' agreement and reconcile
//	Follower   the change-feed follower that keeps caches and Redis in line
//	Warmer     loading on-sale events before their first buyer
//	Reaper     expiring holds past their time
//
// Background jobs (Follower, Warmer, Reaper, Waitlist, Monitor) each have
// a Run(ctx) that the app starts and that returns when ctx ends. What a
// job starts on its own in the background (a warm after publishing, the
// reload of a pinned event) is tracked by the Engine, whose Close cancels
// it and waits for it.
package hold
