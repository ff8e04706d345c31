package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// bench is one run: it sets up the environment, runs the phases and fills
// the report. The phases work through its parts: procs (the seatd
// processes), load (the buyers' holds), pgbench (the references) and fx
// (the organization and its events).
type bench struct {
	cfg config
	log *progress
	rep *Report

	root     string // absolute repository root
	tmp      string // work dir: seatd binary, server logs, pgbench logs
	dbURL    string
	redisURL string
	db       *pgxpool.Pool

	procs   *procs
	load    *loadgen
	pgbench *pgbench
	fx      *fixture

	loadAtStart string // /proc/loadavg before anything ran
}

type progress struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newProgress(w io.Writer) *progress { return &progress{w: w, start: time.Now()} }

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[seatbench %6.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

// setup brings up the services, builds seatd, starts the main process and
// creates the accounts every phase shares.
func (b *bench) setup(ctx context.Context) error {
	root, err := filepath.Abs(b.cfg.root)
	if err != nil {
		return err
	}
	if mod, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !bytes.HasPrefix(mod, []byte("module seatd")) {
		return fmt.Errorf("%s is not the seatd repository root (-root)", root)
	}
	b.root = root
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(l)); len(f) >= 3 {
			b.loadAtStart = strings.Join(f[:3], " ")
		}
	}
	if b.tmp, err = os.MkdirTemp("", "seatbench-"); err != nil {
		return err
	}
	b.log.printf("work dir %s (server and pgbench logs)", b.tmp)
	pgBin, err := findPGBin()
	if err != nil {
		return err
	}
	if b.dbURL, b.redisURL, err = servicesUp(ctx, b.root, b.log); err != nil {
		return err
	}
	if b.cfg.freshDB {
		if err := freshDatabase(ctx, b.dbURL, b.redisURL, b.log); err != nil {
			return err
		}
	}
	b.procs = &procs{log: b.log, root: b.root, tmp: b.tmp, dbURL: b.dbURL, redisURL: b.redisURL,
		seatdEnv: b.cfg.seatdEnv, pgMaxConns: b.cfg.pgMaxConns}
	if err := b.procs.build(ctx, b.cfg.seatd); err != nil {
		return err
	}
	b.rep.Machine = b.machine(ctx)
	main, err := b.procs.start(ctx, "main", nil)
	if err != nil {
		return err
	}
	pcfg, err := pgxpool.ParseConfig(b.dbURL)
	if err != nil {
		return err
	}
	pcfg.MaxConns = 8
	pcfg.ConnConfig.RuntimeParams["application_name"] = "seatbench"
	if b.db, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return err
	}
	if b.fx, err = newFixture(ctx, b.log, b.db, b.procs, main, b.cfg.buyersNeeded(), b.cfg.freshDB); err != nil {
		return err
	}
	b.load = &loadgen{procs: b.procs, organizer: b.fx.organizer}
	b.pgbench = &pgbench{binDir: pgBin, tmp: b.tmp, dbURL: b.dbURL, db: b.db, fx: b.fx, procs: b.procs,
		seats: b.cfg.refSeats, warmup: b.cfg.warmup, duration: b.cfg.duration}
	return nil
}

// cleanup stops every process this run started (by PID) and, unless
// told otherwise, the bench services.
func (b *bench) cleanup() {
	if b.procs != nil {
		b.procs.stopAll()
	}
	if b.db != nil {
		b.db.Close()
	}
	if b.root != "" && !b.cfg.keepServices {
		servicesDown(b.root, b.log)
	}
	if b.tmp != "" {
		if len(b.rep.Errors) == 0 {
			_ = os.RemoveAll(b.tmp)
		} else {
			b.log.printf("kept %s for the failed phases' logs", b.tmp)
		}
	}
}

// benchPorts are the bench profile's Postgres and Redis ports: services.sh's
// defaults, or SEATD_PG_PORT / SEATD_REDIS_PORT when set (so two copies of
// the repository can bench side by side, each on its own services).
func benchPorts() (pg, redis string) {
	pg, redis = "25452", "26399"
	if v := os.Getenv("SEATD_PG_PORT"); v != "" {
		pg = v
	}
	if v := os.Getenv("SEATD_REDIS_PORT"); v != "" {
		redis = v
	}
	return pg, redis
}

// serviceEnv is our environment without the variables that would make
// services.sh manage nothing (an external DATABASE_URL / REDIS_URL): the
// bench must only ever touch its own Postgres and Redis, never a database
// someone else pointed us at. The profile's ports pass through.
func serviceEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "SEATD_PG_PORT", k == "SEATD_REDIS_PORT":
			env = append(env, kv)
		case k == "DATABASE_URL", k == "REDIS_URL":
		case strings.HasPrefix(k, "SEATD_"), strings.HasPrefix(k, "PG"):
		default:
			env = append(env, kv)
		}
	}
	return env
}

// servicesUp brings up the bench Postgres and Redis and returns the URLs
// services.sh prints for them.
func servicesUp(ctx context.Context, root string, log *progress) (dbURL, redisURL string, err error) {
	log.printf("scripts/services.sh up bench")
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts/services.sh"), "up", "bench")
	cmd.Env = serviceEnv()
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, log.w
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("services.sh up bench: %w", err)
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, "'")
		switch k {
		case "DATABASE_URL":
			dbURL = v
		case "REDIS_URL":
			redisURL = v
		}
	}
	if dbURL == "" || redisURL == "" {
		return "", "", fmt.Errorf("services.sh up bench printed no DATABASE_URL / REDIS_URL")
	}
	return dbURL, redisURL, nil
}

// servicesDown stops the bench Postgres and Redis.
func servicesDown(root string, log *progress) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts/services.sh"), "down", "bench")
	cmd.Env = serviceEnv()
	cmd.Stdout, cmd.Stderr = log.w, log.w
	if err := cmd.Run(); err != nil {
		log.printf("services down: %v", err)
	}
}

// freshDatabase drops and recreates the bench database and flushes the
// bench Redis, so every run starts from the same (empty) state. It refuses
// anything but the loopback bench profile.
func freshDatabase(ctx context.Context, dbURL, redisURL string, log *progress) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	pgPort, redisPort := benchPorts()
	if u.Hostname() != "127.0.0.1" || u.Port() != pgPort {
		return fmt.Errorf("refusing to recreate %s: not the bench profile (127.0.0.1:%s); use -fresh-db=false", u.Host, pgPort)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin := *u
	admin.Path = "/postgres"
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return fmt.Errorf("connect to the bench Postgres: %w", err)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident+" OWNER "+pgx.Identifier{u.User.Username()}.Sanitize()); err != nil {
		return err
	}
	ru, err := url.Parse(redisURL)
	if err != nil || ru.Hostname() != "127.0.0.1" || ru.Port() != redisPort {
		return fmt.Errorf("refusing to flush %s: not the bench profile (127.0.0.1:%s)", redisURL, redisPort)
	}
	rdb := redis.NewClient(&redis.Options{Addr: ru.Host})
	defer rdb.Close()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("flush the bench Redis: %w", err)
	}
	log.printf("fresh database %s and empty Redis", name)
	return nil
}

// findPGBin returns the newest /usr/lib/postgresql/*/bin holding pgbench.
func findPGBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var ok []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pgbench")); err == nil {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return "", errors.New("no /usr/lib/postgresql/*/bin/pgbench (install postgresql-contrib or postgresql)")
	}
	sort.Slice(ok, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(ok[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(ok[j])))
		return vi < vj
	})
	return ok[len(ok)-1], nil
}

// Machine describes where the figures were taken.
type Machine struct {
	CPUs          int               `json:"cpus"`
	CPUModel      string            `json:"cpu_model"`
	MemoryMiB     int               `json:"memory_mib"`
	Kernel        string            `json:"kernel"`
	GoVersion     string            `json:"go_version"`
	Postgres      string            `json:"postgres"`
	PostgresConf  map[string]string `json:"postgres_settings"`
	Redis         string            `json:"redis"`
	OpenFileLimit uint64            `json:"open_file_limit"`
	LoadAvg       string            `json:"load_average_at_start"`
}

func (b *bench) machine(ctx context.Context) Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), PostgresConf: map[string]string{}}
	if out, err := exec.CommandContext(ctx, "go", "version").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) >= 3 {
			m.GoVersion = f[2]
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.Atoi(f[1])
				m.MemoryMiB = kb / 1024
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	m.LoadAvg = b.loadAtStart
	var uts syscall.Utsname
	if syscall.Uname(&uts) == nil {
		m.Kernel = utsString(uts.Release[:])
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		m.OpenFileLimit = lim.Cur
	}
	if conn, err := pgx.Connect(ctx, b.dbURL); err == nil {
		_ = conn.QueryRow(ctx, "SHOW server_version").Scan(&m.Postgres)
		m.Postgres = "PostgreSQL " + strings.Fields(m.Postgres + " ")[0]
		for _, name := range []string{"fsync", "synchronous_commit", "shared_buffers", "max_connections", "wal_level"} {
			var v string
			if conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v) == nil {
				m.PostgresConf[name] = v
			}
		}
		conn.Close(ctx)
	}
	if u, err := url.Parse(b.redisURL); err == nil {
		rdb := redis.NewClient(&redis.Options{Addr: u.Host})
		if info, err := rdb.Info(ctx, "server").Result(); err == nil {
			for _, l := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
					m.Redis = "Redis " + v
				}
			}
		}
		_ = rdb.Close()
	}
	return m
}

func utsString(cs []int8) string {
	var sb strings.Builder
	for _, c := range cs {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
