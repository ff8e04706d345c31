package chaos

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/testenv"
)

// clusterRedis returns the Redis Cluster (a host:port list) the cluster
// tests run on; they run under `make test-cluster`, which starts one with
// scripts/cluster.sh and sets SEATD_CHAOS_CLUSTER.
func clusterRedis(t *testing.T) string {
	t.Helper()
	if os.Getenv("SEATD_CHAOS_CLUSTER") == "" {
		t.Skip("Redis Cluster tests run under make test-cluster (SEATD_CHAOS_CLUSTER=1, REDIS_URL a host:port list)")
	}
	addrs := os.Getenv("REDIS_URL")
	if !strings.Contains(addrs, ",") {
		t.Fatalf("REDIS_URL=%q is not a Redis Cluster address list", addrs)
	}
	return addrs
}

// TestClusterLiveUpdates runs two processes on a Redis Cluster: a hold or a
// release through one reaches a live socket on the other (sharded pub/sub
// on the event's slot), both ways, and the registry agrees in every tier.
func TestClusterLiveUpdates(t *testing.T) {
	addrs := clusterRedis(t)
	c := newCluster(t, clusterOptions{nodes: 2, redisCluster: addrs, sections: 1, rows: 2, perRow: 10})
	p1, p2 := c.nodes[0], c.nodes[1]
	cls := c.buyers(t, 2)
	cl := cls[0]
	ws, stop, live := startWatchers(c, []*client{cls[1], cls[1]})
	t.Cleanup(stop)
	if !live {
		t.Fatal("the processes have no live socket route")
	}
	ctx := context.Background()
	seen := func(w *watcher, seat uuid.UUID, want string) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < 2*time.Second {
			if w.snapshot()[seat].Status == want {
				return time.Since(start)
			}
			time.Sleep(5 * time.Millisecond) // poll interval: the time seen is the figure measured
		}
		t.Fatalf("socket on %s did not see seat %s %s within 2 s (it shows %v)", w.n.name, seat, want, w.snapshot()[seat])
		return 0
	}
	on := map[*node]*watcher{ws[0].n: ws[0], ws[1].n: ws[1]}
	for i, step := range []struct {
		via, other *node
	}{{p1, p2}, {p2, p1}} {
		seat := c.seats[i]
		h := c.mustHold(t, cl, step.via, seat)
		d1 := seen(on[step.other], seat, "held")
		if status, err := releaseOn(ctx, cl, step.via, h.ID); err != nil || status != http.StatusNoContent {
			t.Fatalf("release: %d %v", status, err)
		}
		d2 := seen(on[step.other], seat, "available")
		t.Logf("via %s, seen on %s: hold after %s, release after %s", step.via.name, step.other.name,
			d1.Round(time.Millisecond), d2.Round(time.Millisecond))
	}
	c.mustHold(t, cl, p1, c.seats[5])
	org := c.organizer(t, newTransport())
	for _, n := range c.nodes {
		r, err := c.registry(ctx, org, n)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Consistent || r.Redis != 1 {
			t.Errorf("%s registry: %+v, want consistent with 1 hold in redis", n.name, r)
		}
	}
}

// TestClusterLoad runs the chaos load (no fault) on a Redis Cluster with
// three processes, and applies every check of the chaos run.
func TestClusterLoad(t *testing.T) {
	addrs := clusterRedis(t)
	tm := timing{warm: 500 * time.Millisecond, fault: 3 * time.Second, after: 1500 * time.Millisecond,
		converge: 2 * time.Second, buyers: 24, hot: 6, watchersPerNode: 1, sections: 4, rows: 10, perRow: 25, ttl: 6 * time.Second}
	e := &chaosEnv{t: t, reported: map[string]bool{}}
	start := time.Now()
	e.c = newCluster(t, clusterOptions{nodes: 3, redisCluster: addrs, holdTTL: tm.ttl,
		sections: tm.sections, rows: tm.rows, perRow: tm.perRow})
	tr := newTransport()
	e.l = newLoad(t, e.c, tr, tm.buyers, tm.hot)
	watchClients := loginAll(t, e.c, tr, testenv.AddBuyers(t, e.c.admin, e.c.tenant.Org.ID, tm.watchersPerNode*len(e.c.nodes)))
	e.reader = watchClients[0]
	e.org = e.c.organizer(t, tr)
	ws, stop, live := startWatchers(e.c, watchClients)
	t.Cleanup(stop)
	e.ws = ws
	r := &row{fault: "none (redis cluster)"}
	runFault(e, fault{name: r.fault, inject: func(*chaosEnv) func() { return func() {} }}, r, tm)
	e.finish([]*row{r}, start, live)
}
