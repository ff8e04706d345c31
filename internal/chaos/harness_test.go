package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"seatd/internal/app"
	"seatd/internal/config"
	"seatd/internal/freeport"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

var fullRun = flag.Bool("chaos.full", false, "run the full chaos suite (minutes per run) instead of the short one")

// seatdBuild is the seatd binary built once per test binary: without -race,
// so three of them plus the load fit on two cores.
var seatdBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	// toxiproxy's toxics log through zerolog's global logger.
	zerolog.SetGlobalLevel(zerolog.WarnLevel)
	code := m.Run()
	if seatdBuild.dir != "" {
		_ = os.RemoveAll(seatdBuild.dir)
	}
	os.Exit(code)
}

// seatdBinary returns the path of a seatd binary: SEATD_CHAOS_BIN if set,
// else one built from this tree into a temporary directory.
func seatdBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SEATD_CHAOS_BIN"); p != "" {
		return p
	}
	seatdBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "seatd-chaos-bin-")
		if err != nil {
			seatdBuild.err = err
			return
		}
		seatdBuild.dir = dir
		seatdBuild.path = filepath.Join(dir, "seatd")
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", seatdBuild.path, "seatd/cmd/seatd")
		if out, err := cmd.CombinedOutput(); err != nil {
			seatdBuild.err = fmt.Errorf("go build seatd: %v\n%s", err, out)
			return
		}
		t.Logf("built seatd (no -race) in %s", time.Since(start).Round(time.Millisecond))
	})
	if seatdBuild.err != nil {
		t.Fatal(seatdBuild.err)
	}
	return seatdBuild.path
}

// ports hands out the loopback ports of every process the package's
// tests start, each port once.
var ports freeport.Ports

// freePort returns a loopback port nobody listens on right now, and no
// other process of these tests was given.
func freePort(t testing.TB) int {
	t.Helper()
	port, err := ports.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// ---------------------------------------------------------------------------
// seatd processes

// node is one `seatd serve` process. It can be killed (SIGKILL), stopped
// (SIGTERM) and started again on the same address.
type node struct {
	t    testing.TB
	name string
	bin  string
	addr string
	// ops is the process's ops listener: its /readyz says which path holds
	// take (the public one answers only ready or not).
	ops string
	env []string
	log string

	// pgProxy and redisProxy are this process's own links to Postgres and
	// Redis (redisProxy is nil on a Redis Cluster).
	pgProxy, redisProxy *toxiproxy.Proxy

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	// up says the load balancer sends requests here.
	up atomic.Bool
}

func (n *node) url(path string) string { return "http://" + n.addr + path }

// ready asks the ops listener's /readyz, which reports the hold path
// ("mode").
func (n *node) ready(ctx context.Context) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.ops+"/readyz", nil)
	if err != nil {
		return 0, nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, body, err
}

// start runs the process and waits until it answers /readyz.
func (n *node) start() {
	n.t.Helper()
	if err := n.startErr(); err != nil {
		n.t.Fatal(err)
	}
}

// startErr is start for other goroutines than the test's: it reports
// instead of failing the test.
func (n *node) startErr() error {
	f, err := os.OpenFile(n.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "---- %s start %s\n", n.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(n.bin, "serve")
	cmd.Env = n.env
	cmd.Stdout, cmd.Stderr = f, f
	// If the test process dies without its cleanups (killed, SIGPIPE
	// from a closed output pipe), its seatd processes die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("start %s: %w", n.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("%s exited during start (%s):\n%s", n.name, cmd.ProcessState, n.logTail(40))
		default:
		}
		resp, err := http.Get(n.url("/readyz"))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				n.up.Store(true)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 30s:\n%s", n.name, n.logTail(40))
		}
		time.Sleep(50 * time.Millisecond) // poll interval of the readiness wait
	}
}

// signal sends sig to the process (by its PID) and returns a channel closed
// when it has exited.
func (n *node) signal(sig syscall.Signal) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	_ = syscall.Kill(n.cmd.Process.Pid, sig)
	return n.exited
}

// kill is a crash: SIGKILL, then wait for the exit.
func (n *node) kill() {
	n.up.Store(false)
	<-n.signal(syscall.SIGKILL)
}

// exitCode is the process's exit status after it exited (-1 if killed by a
// signal or still running).
func (n *node) exitCode() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.ProcessState == nil {
		return -1
	}
	return n.cmd.ProcessState.ExitCode()
}

func (n *node) logTail(lines int) string {
	b, err := os.ReadFile(n.log)
	if err != nil {
		return err.Error()
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], "\n")
}

// ---------------------------------------------------------------------------
// proxies

// newToxiServer returns an embedded toxiproxy server (no HTTP API: the tests
// drive the proxies directly).
func newToxiServer() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
}

// startProxy starts a proxy on a free loopback port to upstream; it is
// stopped when the test ends.
func startProxy(t testing.TB, srv *toxiproxy.ApiServer, name, upstream string) *toxiproxy.Proxy {
	t.Helper()
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("proxy %s: %v", name, err)
	}
	t.Cleanup(p.Stop)
	return p
}

// addToxic adds a toxic to a proxy (stream: upstream or downstream).
func addToxic(p *toxiproxy.Proxy, name, typ, stream string, attrs map[string]any) error {
	b, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return err
	}
	_, err = p.Toxics.AddToxicJson(bytes.NewReader(b))
	return err
}

// ---------------------------------------------------------------------------
// the cluster

// clusterOptions shape a test cluster.
type clusterOptions struct {
	nodes   int
	holdTTL time.Duration
	// redisCluster is a comma-separated host:port list of a Redis Cluster,
	// used directly; empty means a private redis-server behind a proxy.
	redisCluster string
	// pgURL is the Postgres to use (behind a proxy); empty means
	// DATABASE_URL.
	pgURL string
	// env overrides seatd settings.
	env map[string]string
	// event grid
	sections, rows, perRow int
	// gaCapacity, when set, adds a general-admission section "GA" of that
	// many places to the event.
	gaCapacity int
}

// cluster is seatd processes, each reaching Postgres and Redis through
// proxies of its own (so a fault can hit every process or just one), a
// private Redis, and an in-process admin app with direct connections for
// setup and SQL checks.
type cluster struct {
	t      testing.TB
	opt    clusterOptions
	redis  *testsvc.Redis // nil on a Redis Cluster
	admin  *app.App
	nodes  []*node
	tenant testenv.Tenant
	event  store.Event
	seats  []uuid.UUID // the seated seats (GA places are not among them)
	// gaPlaces are the places of the GA section (opt.gaCapacity).
	gaPlaces []uuid.UUID
	dir      string
}

// gaSection is the label of the chaos event's GA section.
const gaSection = "GA"

// waitSection is the section whose seats the waitlisters wait for: the
// first, where the hot seats are.
const waitSection = "A"

// addGASection adds a GA section of capacity places to the event, stored
// as seats do it (one place row per place, row store.GARow), and returns
// the places.
func (c *cluster) addGASection(t testing.TB, capacity int) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	var ids []uuid.UUID
	err := c.admin.Store.InTx(ctx, func(tx pgx.Tx) error {
		sec := uuid.New()
		if _, err := tx.Exec(ctx, `
			INSERT INTO sections (id, org_id, event_id, label, name, position, kind, capacity)
			VALUES ($1, $2, $3, $4, 'Standing', (SELECT count(*) FROM sections WHERE event_id = $3), 'ga', $5)`,
			sec, c.tenant.Org.ID, c.event.ID, gaSection, capacity); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			INSERT INTO seats (id, org_id, event_id, section_id, row_label, number, idx, x, y)
			SELECT gen_random_uuid(), $1, $2, $3, $4, n, (SELECT max(idx) FROM seats WHERE event_id = $2) + n, 0, 0
			FROM generate_series(1, $5) n RETURNING id`, c.tenant.Org.ID, c.event.ID, sec, store.GARow, capacity)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		return err
	})
	if err != nil {
		t.Fatalf("GA section: %v", err)
	}
	return ids
}

func newCluster(t testing.TB, opt clusterOptions) *cluster {
	t.Helper()
	if opt.nodes == 0 {
		opt.nodes = 3
	}
	if opt.holdTTL == 0 {
		opt.holdTTL = 15 * time.Minute
	}
	if opt.sections == 0 {
		opt.sections, opt.rows, opt.perRow = 2, 10, 20
	}
	c := &cluster{t: t, opt: opt, dir: t.TempDir()}
	bin := seatdBinary(t)

	pgDirect := opt.pgURL
	if pgDirect == "" {
		pgDirect = privateDatabase(t, testsvc.Config(t).DatabaseURL)
	}
	u, err := url.Parse(pgDirect)
	if err != nil {
		t.Fatalf("database url: %v", err)
	}
	tox := newToxiServer()
	redisDirect := opt.redisCluster
	if redisDirect == "" {
		c.redis = testsvc.StartRedis(t)
		redisDirect = c.redis.URL()
	}

	c.admin = testenv.App(t, func(cfg *config.Config) {
		cfg.DatabaseURL = pgDirect
		cfg.RedisURL = redisDirect
	})
	c.tenant = testenv.NewTenant(t, c.admin, 0)
	c.event = testenv.NewEvent(t, c.admin, c.tenant.Org.ID, opt.sections, opt.rows, opt.perRow)
	// Two price categories, alternating by seat number, so the sales the
	// faults interrupt are paid and the revenue counters have work to do.
	if _, err := c.admin.Pool.Exec(context.Background(), `
		WITH cats AS (
			INSERT INTO event_categories (org_id, event_id, key, name, color, position, price_minor, currency)
			VALUES ($1, $2, 'even', 'Even', '#4f46e5', 0, 2500, 'EUR'), ($1, $2, 'odd', 'Odd', '#059669', 1, 4000, 'EUR')
			RETURNING key)
		UPDATE seats SET category = CASE WHEN number % 2 = 0 THEN 'even' ELSE 'odd' END
		WHERE org_id = $1 AND event_id = $2 AND (SELECT count(*) FROM cats) = 2`, c.tenant.Org.ID, c.event.ID); err != nil {
		t.Fatalf("price the event: %v", err)
	}
	c.seats = testenv.SeatIDs(t, c.admin, c.tenant.Org.ID, c.event.ID)
	if opt.gaCapacity > 0 {
		c.gaPlaces = c.addGASection(t, opt.gaCapacity)
	}

	env := map[string]string{
		"PATH":                        os.Getenv("PATH"),
		"SEATD_ENV":                   "test",
		"SEATD_LOG_LEVEL":             "warn",
		"SEATD_PAYMENTS":              "off", // the buyers purchase directly
		"SEATD_HOLD_TTL":              opt.holdTTL.String(),
		"SEATD_HOLD_RATE_PER_MINUTE":  "1000000",
		"SEATD_LOGIN_RATE_PER_MINUTE": "1000000",
		// Every client comes from 127.0.0.1: the per-address limits on
		// new sessions, whole-event reads and sockets would refuse the load.
		"SEATD_NEW_SESSION_RATE_PER_MINUTE": "1000000",
		"SEATD_READ_RATE_PER_MINUTE":        "1000000",
		"SEATD_READ_PREFIX_RATE_PER_MINUTE": "1000000",
		"SEATD_MAX_SOCKETS_PER_USER":        "100000",
		"SEATD_MAX_SOCKETS_PER_NETWORK":     "100000",
		"SEATD_MAX_HOLDS_PER_BUYER":         "200",
		"SEATD_NEW_ACCOUNT_AGE":             "0", // its buyers are made just before the load
		"SEATD_BREAKER_FAILURES":            "3",
		"SEATD_BREAKER_OPEN_FOR":            "500ms",
		"SEATD_REDIS_TIMEOUT":               "150ms",
		"SEATD_REDIS_DIAL_TIMEOUT":          "150ms",
		"SEATD_PG_MAX_CONNS":                "16",
		"SEATD_PG_STATEMENT_TIMEOUT":        "3s",
		"SEATD_SHUTDOWN_TIMEOUT":            "5s",
		"SEATD_REAPER_INTERVAL":             "250ms",
		// Offers lapse like holds, so waitlisters who walk away free
		// their seats within the run.
		"SEATD_WAITLIST_OFFER_TTL": opt.holdTTL.String(),
	}
	maps.Copy(env, opt.env)
	var envList []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	for i := range opt.nodes {
		addr, ops := "127.0.0.1:"+strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
		n := &node{t: t, name: fmt.Sprintf("seatd%d", i+1), bin: bin, addr: addr, ops: ops,
			env: append(slices.Clone(envList), "SEATD_ADDR="+addr, "SEATD_OPS_ADDR="+ops),
			log: filepath.Join(c.dir, fmt.Sprintf("seatd%d.log", i+1)),
		}
		n.pgProxy = startProxy(t, tox, n.name+"-postgres", u.Host)
		pu := *u
		pu.Host = n.pgProxy.Listen
		n.env = append(n.env, "DATABASE_URL="+pu.String())
		if c.redis != nil {
			n.redisProxy = startProxy(t, tox, n.name+"-redis", c.redis.Addr())
			n.env = append(n.env, "REDIS_URL=redis://"+n.redisProxy.Listen+"/0")
		} else {
			// Cluster nodes announce their own addresses; a proxy in
			// front of one would be bypassed by redirects.
			n.env = append(n.env, "REDIS_URL="+opt.redisCluster)
		}
		c.nodes = append(c.nodes, n)
		t.Cleanup(n.kill)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.nodes))
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = n.startErr() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.nodes {
				t.Logf("%s log tail:\n%s", n.name, n.logTail(30))
			}
		}
	})
	return c
}

// toxic adds a toxic to the Redis (or Postgres) link of the given processes
// (all of them when none is named) and returns the function removing it.
func (c *cluster) toxic(t testing.TB, pg bool, typ, stream string, attrs map[string]any, nodes ...*node) func() {
	t.Helper()
	if len(nodes) == 0 {
		nodes = c.nodes
	}
	var ps []*toxiproxy.Proxy
	for _, n := range nodes {
		p := n.redisProxy
		if pg {
			p = n.pgProxy
		}
		if err := addToxic(p, typ+"-"+stream, typ, stream, attrs); err != nil {
			t.Fatalf("toxic %s on %s: %v", typ, p.Name, err)
		}
		ps = append(ps, p)
	}
	return func() {
		for _, p := range ps {
			p.Toxics.ResetToxics(context.Background())
		}
	}
}

// privateDatabase creates a database of its own for a test on the server
// of base, and drops it when the test ends. Every seatd process reaps the
// expired holds of its whole database and announces them on its own Redis,
// so on a database shared with other tests' processes, holds of this test
// would be expired by processes whose deltas never reach it.
func privateDatabase(t testing.TB, base string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect %s: %v", base, err)
	}
	defer conn.Close(ctx)
	name := "seatd_chaos_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// upNodes are the nodes the load balancer uses.
func (c *cluster) upNodes() []*node {
	var out []*node
	for _, n := range c.nodes {
		if n.up.Load() {
			out = append(out, n)
		}
	}
	return out
}

// seatState is a seat's status and version.
type seatState struct {
	Status  string
	Version int64
}

// pgSeats reads the event's seats from Postgres directly.
func (c *cluster) pgSeats(ctx context.Context) (map[uuid.UUID]seatState, error) {
	m, _, err := c.pgSeatsSince(ctx, time.Now())
	return m, err
}

// pgSeatsSince reads the event's seats and which of them changed after
// since (the processes and this test share the machine's clock).
func (c *cluster) pgSeatsSince(ctx context.Context, since time.Time) (map[uuid.UUID]seatState, map[uuid.UUID]bool, error) {
	rows, err := c.admin.Pool.Query(ctx, `
		SELECT s.id, s.status, s.version, s.updated_at > $3 FROM seats s JOIN sections sc ON sc.id = s.section_id
		WHERE s.org_id = $1 AND s.event_id = $2 AND sc.kind = 'seated'`,
		c.tenant.Org.ID, c.event.ID, since)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out := make(map[uuid.UUID]seatState, len(c.seats))
	fresh := map[uuid.UUID]bool{}
	for rows.Next() {
		var id uuid.UUID
		var s seatState
		var isFresh bool
		if err := rows.Scan(&id, &s.Status, &s.Version, &isFresh); err != nil {
			return nil, nil, err
		}
		out[id] = s
		if isFresh {
			fresh[id] = true
		}
	}
	return out, fresh, rows.Err()
}

// diffSeats describes where a view differs from the truth (at most a few
// seats), or returns "" when they agree.
func diffSeats(view, truth map[uuid.UUID]seatState) string {
	var diffs []string
	n := 0
	for id, want := range truth {
		got, ok := view[id]
		if ok && got == want {
			continue
		}
		n++
		if len(diffs) < 3 {
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s missing (want %s v%d)", id, want.Status, want.Version))
			} else {
				diffs = append(diffs, fmt.Sprintf("%s %s v%d (want %s v%d)", id, got.Status, got.Version, want.Status, want.Version))
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d seats differ: %s", n, strings.Join(diffs, "; "))
}

// betweenSeats checks a view taken while Postgres kept changing: read
// before (a) and after (b) the view, every seat's version must lie between
// the two reads, and where it equals one of them so must the status.
func betweenSeats(view, a, b map[uuid.UUID]seatState) string {
	var diffs []string
	n := 0
	for id, lo := range a {
		hi := b[id]
		got, ok := view[id]
		bad := !ok || got.Version < lo.Version || got.Version > hi.Version ||
			(got.Version == lo.Version && got.Status != lo.Status) ||
			(got.Version == hi.Version && got.Status != hi.Status)
		if !bad {
			continue
		}
		n++
		if len(diffs) < 3 {
			diffs = append(diffs, fmt.Sprintf("%s %s v%d (postgres went from %s v%d to %s v%d)",
				id, got.Status, got.Version, lo.Status, lo.Version, hi.Status, hi.Version))
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d seats outside postgres's range: %s", n, strings.Join(diffs, "; "))
}

// errStatus is an unexpected HTTP status.
type errStatus struct {
	code int
	body string
}

func (e *errStatus) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }
