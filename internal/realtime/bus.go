// Package realtime carries change messages between seatd processes. Each
// event has a Redis sharded pub/sub channel; while Redis is unhealthy,
// messages travel through Postgres NOTIFY instead, which every process
// listens to all the time (through its notifier, internal/notify), so
// live views keep moving during an outage.
package realtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"seatd/internal/coalesce"
)

// notifyChannel is the single Postgres channel of the fallback path; the
// payload starts with the Redis channel name so receivers can route it.
const notifyChannel = "seatd_live"

// MaxPayload is the largest message Publish accepts: Postgres NOTIFY
// payloads must stay under 8000 bytes including the channel name.
const MaxPayload = 7000

// Handler receives the payload of a message on a subscribed channel.
type Handler func(payload []byte)

// Notifier is what the bus needs of the process's notifier.
type Notifier interface {
	Listen(channel string, fn func(payload string)) (unlisten func())
	OnReady(fn func()) (remove func())
}

// Subscriber is what the bus needs of a Redis client besides its
// commands. go-redis's clients (one server or a cluster) are both; New
// takes its client as redis.Cmdable and asks it for this, so that the
// packages passing the client along never name go-redis's client types
// (see internal/redisconn).
type Subscriber interface {
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Bus publishes and subscribes to per-event channels.
type Bus struct {
	rdb          redis.Cmdable
	sub          Subscriber
	pool         *pgxpool.Pool
	log          *slog.Logger
	redisHealthy func() bool
	// unlisten stops hearing the NOTIFY fallback.
	unlisten func()

	mu   sync.Mutex
	subs map[string]*channel
	next int
	// receivers are the Redis subscriptions' goroutines; Close waits.
	receivers sync.WaitGroup

	// publishes share Redis round trips, notifies Postgres statements
	// (see send).
	publishes, notifies *coalesce.Batcher[publication, error]
}

type publication struct {
	channel string
	payload []byte
}

// maxPipeline bounds the messages sent in one Redis round trip.
const maxPipeline = 256

type channel struct {
	ps       *redis.PubSub
	handlers map[int]Handler
	resync   map[int]func()
	done     chan struct{}
	// ready is closed once Redis has confirmed the subscription, or
	// subscribeWait has passed without it.
	ready chan struct{}
}

// subscribeWait bounds how long Subscribe waits for Redis to confirm a new
// subscription (when Redis is down, go-redis subscribes once it is back and
// the resync callbacks run then).
const subscribeWait = time.Second

// New returns a bus that hears the Postgres fallback through n. rdb must
// be a Subscriber too (it panics otherwise, a wiring mistake). redisHealthy
// reports whether Redis should be used to publish (the breaker is closed);
// when false, Publish goes through Postgres.
func New(rdb redis.Cmdable, pool *pgxpool.Pool, n Notifier, log *slog.Logger, redisHealthy func() bool) *Bus {
	sub, ok := rdb.(Subscriber)
	if !ok {
		panic(fmt.Sprintf("realtime.New: the Redis client %T cannot subscribe", rdb))
	}
	b := &Bus{rdb: rdb, sub: sub, pool: pool, log: log, redisHealthy: redisHealthy, subs: map[string]*channel{}}
	b.publishes = coalesce.New(1, maxPipeline, b.sendPipeline)
	b.notifies = coalesce.New(1, maxPipeline, b.sendNotifies)
	unlisten := n.Listen(notifyChannel, b.heard)
	// Fallback messages sent while the notifier was not listening are
	// lost: every subscriber resyncs, as after a Redis resubscribe.
	unready := n.OnReady(b.resyncAll)
	b.unlisten = func() { unlisten(); unready() }
	return b
}

// ErrTooLarge is returned for payloads over MaxPayload.
var ErrTooLarge = errors.New("realtime: payload too large")

// Publish sends payload on channel to every subscribed process.
func (b *Bus) Publish(ctx context.Context, channel string, payload []byte) error {
	if len(payload) > MaxPayload {
		return ErrTooLarge
	}
	if b.redisHealthy() {
		err := send(ctx, b.publishes, channel, payload)
		if err == nil {
			return nil
		}
		b.log.Warn("redis publish failed, using postgres notify", "channel", channel, "err", err)
	}
	return send(ctx, b.notifies, channel, payload)
}

// sendNotifies sends one statement of messages and answers each. Every
// notifying transaction takes Postgres's single notify-queue lock at
// commit and flushes a commit record, so a statement per message had a
// crowd's messages wait on each other there and on the shared pool behind
// the holds. Messages of one statement are queued in order. Postgres
// drops a message identical to one before it in the same transaction;
// only messages that mean the same twice can be (a seat's deltas carry
// its version).
func (b *Bus) sendNotifies(ctx context.Context, batch []*coalesce.Call[publication, error]) {
	msgs := make([]string, len(batch))
	for i, x := range batch {
		msgs[i] = x.Req.channel + "\n" + string(x.Req.payload)
	}
	_, err := b.pool.Exec(ctx, `SELECT pg_notify($1, m) FROM unnest($2::text[]) AS m`, notifyChannel, msgs)
	for _, x := range batch {
		x.Answer(err)
	}
}

// send hands one message to via, a batcher of Redis pipelines
// (sendPipeline) or of NOTIFY statements (sendNotifies), and returns once
// it was accepted. Concurrent calls share round trips: while one batch is
// in flight, other callers queue, and the next batch carries everything
// queued. Alone, a call costs one round trip; under load, a round trip
// carries many messages. Each caller still returns only after its own
// message was accepted, so publish-after-commit holds. A message is never
// withdrawn for its caller's cancellation (a change made must be told),
// and the batch carrying it carries other callers' messages too.
func send(ctx context.Context, via *coalesce.Batcher[publication, error], channel string, payload []byte) error {
	res, err := via.Do(context.WithoutCancel(ctx), publication{channel: channel, payload: payload})
	if err != nil {
		return err
	}
	return res
}

// sendPipeline sends one pipeline of messages and answers each.
func (b *Bus) sendPipeline(ctx context.Context, batch []*coalesce.Call[publication, error]) {
	cmds := make([]*redis.IntCmd, len(batch))
	_, _ = b.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, x := range batch {
			cmds[i] = pl.SPublish(ctx, x.Req.channel, x.Req.payload)
		}
		return nil
	})
	for i, x := range batch {
		x.Answer(cmds[i].Err())
	}
}

// Subscribe calls h for every message on channel until the returned
// function is called. resync (optional) is called when the Redis
// subscription was re-established after a disconnect, and when the
// notifier (re)connected: messages may have been missed, so the
// subscriber should reload its state. It must not block.
func (b *Bus) Subscribe(name string, h func(payload []byte), resync func()) (unsubscribe func()) {
	unsubscribe, ready := b.subscribe(name, h, resync)
	// Callers subscribe before reading the state the messages keep
	// current (a hot cache's load): a message published after Subscribe
	// returns must reach h, so wait until Redis has the subscription.
	<-ready
	return unsubscribe
}

func (b *Bus) subscribe(name string, h func(payload []byte), resync func()) (unsubscribe func(), ready <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.subs[name]
	if !ok {
		c = &channel{handlers: map[int]Handler{}, resync: map[int]func(){}, done: make(chan struct{}), ready: make(chan struct{})}
		// The subscription runs in the background on its own connection;
		// go-redis reconnects and resubscribes on its own.
		c.ps = b.sub.SSubscribe(context.Background(), name)
		b.subs[name] = c
		b.receivers.Go(func() { b.receive(name, c) })
	}
	b.next++
	id := b.next
	c.handlers[id] = h
	if resync != nil {
		c.resync[id] = resync
	}
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(c.handlers, id)
		delete(c.resync, id)
		if len(c.handlers) == 0 && b.subs[name] == c {
			delete(b.subs, name)
			_ = c.ps.Close()
		}
	}, c.ready
}

// Subscribed reports whether this process has a subscription on name.
func (b *Bus) Subscribed(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.subs[name]
	return ok
}

func (b *Bus) receive(name string, c *channel) {
	// The first reply is the subscription's confirmation. Past it (or
	// past the wait, Redis being away), every confirmation is a
	// resubscribe, which may have missed messages: the resync callbacks
	// run (at worst one extra for a confirmation merely late).
	ctx, cancel := context.WithTimeout(context.Background(), subscribeWait)
	_, _ = c.ps.Receive(ctx)
	cancel()
	close(c.ready)
	for msg := range c.ps.ChannelWithSubscriptions(redis.WithChannelSize(1024)) {
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "ssubscribe" {
				continue
			}
			b.log.Info("live channel resubscribed", "channel", name)
			for _, f := range b.resyncers(name) {
				f()
			}
		case *redis.Message:
			b.dispatch(name, []byte(m.Payload))
		}
	}
}

func (b *Bus) resyncers(name string) []func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.subs[name]
	if c == nil {
		return nil
	}
	out := make([]func(), 0, len(c.resync))
	for _, f := range c.resync {
		out = append(out, f)
	}
	return out
}

func (b *Bus) dispatch(name string, payload []byte) {
	b.mu.Lock()
	c := b.subs[name]
	var hs []Handler
	if c != nil {
		hs = make([]Handler, 0, len(c.handlers))
		for _, h := range c.handlers {
			hs = append(hs, h)
		}
	}
	b.mu.Unlock()
	for _, h := range hs {
		h(payload)
	}
}

// heard routes a fallback message to the subscribers of its channel.
func (b *Bus) heard(n string) {
	if name, payload, ok := strings.Cut(n, "\n"); ok {
		b.dispatch(name, []byte(payload))
	}
}

// resyncAll calls every subscriber's resync callback. They only kick a
// loop (the notifier's ready callbacks must not block).
func (b *Bus) resyncAll() {
	b.mu.Lock()
	var fs []func()
	for _, c := range b.subs {
		for _, f := range c.resync {
			fs = append(fs, f)
		}
	}
	b.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Close ends every subscription and waits for their goroutines.
func (b *Bus) Close() {
	b.unlisten()
	b.mu.Lock()
	for name, c := range b.subs {
		_ = c.ps.Close()
		delete(b.subs, name)
	}
	b.mu.Unlock()
	b.receivers.Wait()
}
