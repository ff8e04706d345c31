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
//	Payments   buyers' online payments: the provider's confirmation alone
//	           books them; refunds; the reconciler
//
// The payment flow (docs/architecture.md#payments) is what the web layer
// calls for checkout, the provider's webhooks and refunds:
//
//	Start(ctx, a, event, key) (Started, error)
//	    the buyer's payment for all their active holds of the event, under
//	    their Idempotency-Key (the same key answers the same payment);
//	    Started.ClientSecret goes to the buyer's page (Stripe's Payment
//	    Element with the publishable key, or the test provider's card
//	    form, whose Confirm takes the intent id and the secret); errors:
//	    holds_expired, conflict (a payment of them is processing),
//	    invalid (nothing to pay), provider_unavailable (502: nothing was
//	    changed, try again)
//	ClientSecret(ctx, a, payment) (string, error)   the secret again (page reloaded)
//	SecretOf(ctx, a, store.Payment) (string, error) the same for a payment read already
//	Abandon(ctx, a, payment) (store.Payment, error) the buyer gives up paying
//	Get(ctx, a, payment), Mine(ctx, a, event), List(ctx, a, store.PaymentFilter)
//	    a payment with its holds and refunds (buyers their own; staff any),
//	    the buyer's payments of an event, an event's payments for staff
//	Webhook(ctx, body, header) (Applied, error)
//	    POST /webhooks/stripe: body read up to payment.MaxEventBytes,
//	    header = payment.SignatureHeader; answer 400 for apperr.BadRequest
//	    (a bad signature: nothing changed), 500 for any other error (the
//	    provider sends it again), 200 otherwise, whatever Applied.Result
//	Cancel(ctx, a, booking, tickets, reason) (store.Booking, *store.Refund, error)
//	    staff cancel tickets; a booking paid online is refunded their prices
//	    (BoxOffice.Cancel refuses it)
//	RetryRefund(ctx, a, refund), FailedRefunds(ctx, a)     staff
//	Summary(ctx, a, event), WriteCSV(ctx, a, event, w)     organizers' figures, payments.csv
//
// Holds being paid for carry their payment (store.Hold.PaymentID in
// Holds.Mine): the cart shows them as paying, and only staff may release
// them.
//
// Background jobs (Follower, Warmer, Reaper, Waitlist, Monitor, Payments) each have
// a Run(ctx) that the app starts and that returns when ctx ends. What a
// job starts on its own in the background (a warm after publishing, the
// reload of a pinned event) is tracked by the Engine, whose Close cancels
// it and waits for it.
package hold
