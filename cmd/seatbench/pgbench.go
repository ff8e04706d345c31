package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/store"
)

// pgbenchScript is the engine's hold statement (holdsSQL in
// internal/store/holdbatch.go: guarded UPDATE of the seat, INSERT of the
// hold, INSERT of the audit row, the buyer's count of active holds, one
// autocommitted statement) for one seat per transaction. Each client takes
// seats idx = client_id, client_id + nclients, ...: every transaction holds
// a different seat, like the HTTP run; and each client is its own buyer
// (bench_clients maps it to one), as each HTTP buyer is. The seat is found
// by its (event_id, idx) index instead of being passed by id, and the
// times come from now() instead of parameters; both cost about the same as
// what they replace.
const pgbenchScript = `\set k :k + 1
\set idx :k * :nclients + :client_id - :nclients
WITH r AS (
    SELECT s0.id AS seat_id, ` + holdIDSQL + ` AS hold_id, (:idx + 1)::bigint AS fence,
           (SELECT user_id FROM bench_clients WHERE client_id = :client_id) AS user_id
    FROM seats s0 WHERE s0.org_id = :org AND s0.event_id = :event AND s0.idx = :idx
), upd AS (
    UPDATE seats s
    SET status = 'held', hold_id = r.hold_id, version = s.version + 1, fence = r.fence, updated_at = now()
    FROM r
    WHERE s.org_id = :org AND s.event_id = :event AND s.id = r.seat_id
      AND s.status = 'available' AND s.fence < r.fence
    RETURNING s.id, s.version, r.hold_id, r.fence, r.user_id
), ins AS (
    INSERT INTO seat_holds (id, org_id, event_id, seat_id, user_id, status, held_until, fence, source, created_at)
    SELECT hold_id, :org, :event, id, user_id, 'active', now() + interval '15 minutes', fence, 'api', now() FROM upd
), aud AS (
    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data, at)
    SELECT :org, :event, user_id, 'hold.created', 'seat_hold', hold_id, id,
           jsonb_build_object('fence', fence, 'held_until', now() + interval '15 minutes', 'source', 'api'::text), now()
    FROM upd
), cnt AS (
    INSERT INTO buyer_holds AS b (org_id, event_id, user_id, active, cap)
    SELECT :org, :event, user_id, count(*), 2147483647 FROM upd GROUP BY user_id
    ON CONFLICT (org_id, event_id, user_id) DO UPDATE SET active = b.active + excluded.active, cap = excluded.cap
)
SELECT id, version, hold_id, fence FROM upd;
`

// holdIDSQL makes a hold id as seatd does (store.NewID): a UUIDv7, so
// ids of one moment sit together in the primary key (migration 020).
const holdIDSQL = `uuid_v7()`

// sharedScript runs seatd's shared hold statement itself
// (store.HoldStatement: everything after its input rows) for :batch seats
// per statement, each row its own buyer, as seatd's hold batcher sends it
// under load. The input rows are read from the seats by their (event_id,
// idx) index instead of unnested from arrays passed in.
func sharedScript() (string, error) {
	stmt := store.HoldStatement()
	i := strings.Index(stmt, "), upd AS (")
	if i < 0 {
		return "", fmt.Errorf("the hold statement has no upd step: the reference needs updating")
	}
	return `\set k :k + 1
\set base (:k * :nclients + :client_id - :nclients) * :batch
WITH r AS (
    SELECT s0.org_id, s0.event_id, s0.id AS seat_id, ` + holdIDSQL + ` AS hold_id, (s0.idx + 1)::bigint AS fence,
           (SELECT user_id FROM bench_clients WHERE client_id = :client_id::int * :batch::int + s0.idx - :base::int) AS user_id,
           now() AS created, now() + interval '15 minutes' AS held_until, 'api'::text AS source, 2147483647 AS cap,
           false AS staff, false AS accessible, false AS orphans_checked, NULL::uuid AS request_id,
           2147483647 AS ceiling
    FROM seats s0 WHERE s0.org_id = :org AND s0.event_id = :event AND s0.idx >= :base::int AND s0.idx < :base::int + :batch::int
` + stmt[i:] + ";\n", nil
}

// pgbench takes the reference measurements: pgbench sending the hold
// statements straight to the bench Postgres, on the same tables and
// machine as the HTTP runs they stand beside.
type pgbench struct {
	binDir string // directory with pgbench and psql
	tmp    string // work dir: scripts and per-transaction logs
	dbURL  string
	db     *pgxpool.Pool
	fx     *fixture
	procs  *procs // CPU samples
	// seats is -ref-seats; warmup and duration are the HTTP runs' own.
	seats            int
	warmup, duration time.Duration
}

// mapClients maps pgbench client ids to the bench's buyers (each buyer
// per ids in a row, round robin), for the reference's per-buyer hold count.
func (pg *pgbench) mapClients(ctx context.Context, clients, per int) error {
	users := make([]string, len(pg.fx.buyers))
	for i, u := range pg.fx.buyers {
		users[i] = u.userID
	}
	_, err := pg.db.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS bench_clients (client_id int PRIMARY KEY, user_id uuid NOT NULL);
		TRUNCATE bench_clients;`)
	if err == nil {
		_, err = pg.db.Exec(ctx, `
			INSERT INTO bench_clients SELECT c, ($2::uuid[])[1 + (c / $3) % cardinality($2::uuid[])] FROM generate_series(0, $1 - 1) c`,
			clients, users, per)
	}
	return err
}

// holds runs the reference at the given client count on a fresh event
// of -ref-seats seats: -M prepared (as pgx does), two threads, for
// warmup+duration, counting (like the HTTP run) only transactions ending
// inside the last -duration, from pgbench's per-transaction log.
func (pg *pgbench) holds(ctx context.Context, clients int) (*Load, error) {
	return pg.paced(ctx, clients, 0)
}

// paced is holds throttled to rate transactions/s (-R) when rate is
// positive; its logged latency then runs from each transaction's
// scheduled start, like the paced HTTP run's.
func (pg *pgbench) paced(ctx context.Context, clients int, rate float64) (*Load, error) {
	return pg.load(ctx, clients, rate, 0)
}

// shared runs seatd's shared hold statement with batch holds per
// statement at clients statements at once (seatd's statement slots).
func (pg *pgbench) shared(ctx context.Context, clients, batch int) (*Load, error) {
	return pg.load(ctx, clients, 0, batch)
}

// load runs pgbenchScript, or sharedScript when batch > 0.
func (pg *pgbench) load(ctx context.Context, clients int, rate float64, batch int) (*Load, error) {
	text, perTx, seats := pgbenchScript, 1, pg.seats
	if batch > 0 {
		var err error
		if text, err = sharedScript(); err != nil {
			return nil, err
		}
		// The shared statement alone on vacuumed tables writes 15 000
		// (7 holds a statement) to 60 000 (38) holds a second, more the
		// more holds a statement carries: its event needs room for
		// them (a transaction that finds no seat left is fast and
		// would inflate the rate; readPgbenchLogs' check says so).
		perTx, seats = batch, pg.seats*max(3, batch/5)
	}
	ev, _, err := pg.fx.newEvent(ctx, fmt.Sprintf("pgbench %d", clients), seats, false)
	if err != nil {
		return nil, err
	}
	if err := pg.mapClients(ctx, clients*perTx, 1); err != nil {
		return nil, err
	}
	secs := int(math.Ceil((pg.warmup + pg.duration).Seconds())) + 1
	extra := []string{"-T", strconv.Itoa(secs)}
	if rate > 0 {
		extra = append(extra, "-R", strconv.FormatFloat(rate, 'f', 1, 64))
	}
	prefix, cpu, err := pg.run(ctx, text, ev, clients, perTx, extra...)
	if err != nil {
		return nil, err
	}
	ends, lats, err := readPgbenchLogs(prefix)
	if err != nil {
		return nil, err
	}
	if len(ends) == 0 {
		out, _ := os.ReadFile(prefix + ".out")
		return nil, fmt.Errorf("pgbench logged no transactions: %s", lastLines(string(out), 5))
	}
	first := ends[0]
	for _, e := range ends {
		first = min(first, e)
	}
	winStart := first + pg.warmup.Seconds()
	winEnd := winStart + pg.duration.Seconds()
	l := &Load{Clients: clients, Seconds: pg.duration.Seconds(), Statuses: map[string]int{}, Offered: round3(rate)}
	var win []float64
	for i, e := range ends {
		if e >= winStart && e < winEnd {
			win = append(win, lats[i])
		}
	}
	// Every logged transaction must have written a hold; one that found
	// no seat (out of seats) held nothing.
	var written int
	if err := pg.db.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev).Scan(&written); err != nil {
		return nil, err
	}
	if missing := len(ends)*perTx - written; missing > 0 {
		l.RanOut = true
		l.Note = fmt.Sprintf("%d of %d holds not written: raise -ref-seats", missing, len(ends)*perTx)
	}
	l.Holds = len(win) * perTx
	l.Statuses["commit"] = len(win)
	if perTx > 1 {
		l.Note = strings.TrimPrefix(l.Note+fmt.Sprintf("; %d holds per statement, %d statements at once", perTx, clients), "; ")
	}
	l.Latency = latencyOf(win)
	// pgbench is our child: its time is in the client's share.
	l.CPU = cpu
	l.finish()
	// CPU covers the whole pgbench run, so divide by every transaction.
	per := func(v float64) float64 { return round3(v * 1e6 / float64(len(ends)*perTx)) }
	l.CPUPerHold = CPU{Postgres: per(l.CPU.Postgres), Client: per(l.CPU.Client), Redis: per(l.CPU.Redis), Seatd: per(l.CPU.Seatd)}
	return l, nil
}

// writesAlone is the best-available row's reference (BestWrites): seatd's
// shared hold statement once on each of clients connections at the same
// moment, together holding per seats for each of buyers buyers (side by
// side, as a burst's blocks are) on a fresh event of eventSeats seats.
func (pg *pgbench) writesAlone(ctx context.Context, eventSeats, buyers, per, clients int) (BestWrites, error) {
	text, err := sharedScript()
	if err != nil {
		return BestWrites{}, err
	}
	batch := (buyers*per + clients - 1) / clients
	ev, _, err := pg.fx.newEvent(ctx, "best available, writes alone", eventSeats, false)
	if err != nil {
		return BestWrites{}, err
	}
	if err := pg.mapClients(ctx, clients*batch, per); err != nil {
		return BestWrites{}, err
	}
	prefix, _, err := pg.run(ctx, text, ev, clients, batch, "-t", "1")
	if err != nil {
		return BestWrites{}, err
	}
	ends, lats, err := readPgbenchLogs(prefix)
	if err != nil {
		return BestWrites{}, err
	}
	if len(ends) != clients {
		return BestWrites{}, fmt.Errorf("pgbench logged %d statements of %d", len(ends), clients)
	}
	first, last := ends[0], ends[0]
	for i, e := range ends {
		first, last = min(first, e-lats[i]/1000), max(last, e)
	}
	w := BestWrites{Statements: clients, WallMS: round3((last - first) * 1000)}
	if err := pg.db.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev).Scan(&w.Seats); err != nil {
		return BestWrites{}, err
	}
	// A statement that found its seats taken would be fast and flatter
	// the reference.
	if w.Seats != clients*batch {
		return BestWrites{}, fmt.Errorf("the reference wrote %d holds of %d", w.Seats, clients*batch)
	}
	return w, nil
}

// run runs script on clients connections against event ev with :batch
// seats a transaction, logging every transaction under the returned
// prefix (readPgbenchLogs), and the CPU each part used meanwhile.
func (pg *pgbench) run(ctx context.Context, script, ev string, clients, batch int, extra ...string) (string, CPU, error) {
	path := filepath.Join(pg.tmp, fmt.Sprintf("hold-%d.pgbench.sql", batch))
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		return "", CPU{}, err
	}
	u, err := url.Parse(pg.dbURL)
	if err != nil {
		return "", CPU{}, err
	}
	prefix := filepath.Join(pg.tmp, fmt.Sprintf("pgbench-%d-%d", clients, time.Now().UnixNano()))
	args := []string{"-n", "-h", u.Hostname(), "-p", u.Port(), "-U", u.User.Username(),
		"-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)),
		"-f", path, "-D", "k=0", "-D", "nclients=" + strconv.Itoa(clients),
		"-D", "org=" + pg.fx.orgID, "-D", "event=" + ev, "-D", "batch=" + strconv.Itoa(batch),
		"-l", "--log-prefix=" + prefix}
	args = append(append(args, extra...), strings.TrimPrefix(u.Path, "/"))
	cmd := exec.CommandContext(ctx, filepath.Join(pg.binDir, "pgbench"), args...)
	cmd.Env = serviceEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cpu0 := pg.procs.sampleCPU(nil)
	runErr := cmd.Run()
	cpu := cpu0.to(pg.procs.sampleCPU(nil))
	_ = os.WriteFile(prefix+".out", out.Bytes(), 0o600)
	if runErr != nil {
		return "", CPU{}, fmt.Errorf("pgbench: %w: %s", runErr, lastLines(out.String(), 5))
	}
	return prefix, cpu, nil
}

// readPgbenchLogs reads pgbench's per-transaction logs (one file per
// thread): completion time (epoch seconds) and latency (ms) per line.
func readPgbenchLogs(prefix string) (ends, lats []float64, err error) {
	files, err := filepath.Glob(prefix + ".[0-9]*")
	if err != nil {
		return nil, nil, err
	}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// client_id transaction_no time script_no time_epoch time_us
			fs := strings.Fields(sc.Text())
			if len(fs) < 6 {
				continue
			}
			us, err1 := strconv.ParseFloat(fs[2], 64)
			sec, err2 := strconv.ParseFloat(fs[4], 64)
			frac, err3 := strconv.ParseFloat(fs[5], 64)
			if err1 != nil || err2 != nil || err3 != nil {
				continue
			}
			ends = append(ends, sec+frac/1e6)
			lats = append(lats, us/1000)
		}
		_ = f.Close()
		if err := sc.Err(); err != nil {
			return nil, nil, err
		}
	}
	return ends, lats, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
