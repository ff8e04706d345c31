package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// privatePG is a throwaway Postgres cluster this test owns, so it may be
// restarted. Postgres refuses to run as root, so it runs as the system's
// postgres user in a directory under the temp dir that user owns.
type privatePG struct {
	bin  string
	dir  string // owned by the postgres user; data in dir/data
	port int
	url  string
	cred *syscall.Credential
}

// startPrivatePG creates and starts a private Postgres, or says why not.
func startPrivatePG(t testing.TB) (*privatePG, string) {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		return nil, "no /usr/lib/postgresql/*/bin/pg_ctl"
	}
	sort.Strings(bins)
	p := &privatePG{bin: filepath.Dir(bins[len(bins)-1]), port: freePort(t)}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, "running as root and there is no postgres user"
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "seatd-chaos-pg-")
	if err != nil {
		return nil, err.Error()
	}
	p.dir = dir
	t.Cleanup(func() {
		_ = p.run("pg_ctl", "stop", "-D", p.data(), "-m", "immediate", "-w", "-t", "30")
		_ = os.RemoveAll(dir)
	})
	if p.cred != nil {
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return nil, err.Error()
		}
	}
	start := time.Now()
	if err := p.run("initdb", "-D", p.data(), "-A", "trust", "-U", "seatd", "--no-locale", "--encoding=UTF8", "--no-instructions"); err != nil {
		return nil, err.Error()
	}
	// Durable settings: the restart fault is a crash (immediate stop), and
	// with synchronous_commit off Postgres would lose commits it had
	// already acknowledged — which the checks would rightly report.
	conf := fmt.Sprintf("listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nmax_connections = 200\nfsync = on\nsynchronous_commit = on\nfull_page_writes = on\n", p.port, dir)
	f, err := os.OpenFile(filepath.Join(p.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err.Error()
	}
	_, err = f.WriteString(conf)
	_ = f.Close()
	if err != nil {
		return nil, err.Error()
	}
	if err := p.run("pg_ctl", "start", "-D", p.data(), "-l", filepath.Join(dir, "postgres.log"), "-w", "-t", "60"); err != nil {
		return nil, err.Error()
	}
	if err := p.run("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", "seatd", "seatd"); err != nil {
		return nil, err.Error()
	}
	p.url = fmt.Sprintf("postgres://seatd@127.0.0.1:%d/seatd?sslmode=disable", p.port)
	t.Logf("private postgres on port %d ready in %s", p.port, time.Since(start).Round(time.Millisecond))
	return p, ""
}

func (p *privatePG) data() string { return filepath.Join(p.dir, "data") }

// run runs a Postgres binary as the cluster's owner.
func (p *privatePG) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = "/"
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	return nil
}

// stop is a crash: immediate shutdown, no checkpoint.
func (p *privatePG) stop(t testing.TB) {
	t.Helper()
	if err := p.run("pg_ctl", "stop", "-D", p.data(), "-m", "immediate", "-w", "-t", "30"); err != nil {
		t.Fatal(err)
	}
}

// start starts Postgres again and waits until it accepts connections. After
// a crash that takes its recovery: replaying the WAL written since its last
// checkpoint, then a checkpoint. The log lines saying how long those took
// go to the test log.
func (p *privatePG) start(t testing.TB) {
	t.Helper()
	log := filepath.Join(p.dir, "postgres.log")
	var from int64
	if fi, err := os.Stat(log); err == nil {
		from = fi.Size()
	}
	if err := p.run("pg_ctl", "start", "-D", p.data(), "-l", log, "-w", "-t", "60"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(log)
	if err != nil || int64(len(b)) < from {
		return
	}
	for _, l := range strings.Split(string(b[from:]), "\n") {
		if strings.Contains(l, "redo done") || strings.Contains(l, "checkpoint complete") {
			t.Logf("postgres: %s", l)
		}
	}
}
