package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"seatd/internal/config"
	"seatd/internal/freeport"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// prometheusBinary finds Prometheus: SEATD_PROMETHEUS (make test sets it
// and installs the package first, so there it must work), else PATH.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SEATD_PROMETHEUS"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("SEATD_PROMETHEUS=%s: %v", p, err)
		}
		return p
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("no prometheus binary (set SEATD_PROMETHEUS or run scripts/prometheus.sh install; make test does)")
	}
	return p
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// promServer is a Prometheus process of a test, stopped by PID when the
// test ends.
type promServer struct {
	t    *testing.T
	base string
}

// startPrometheus runs Prometheus scraping target every second, with the
// project's alert rules loaded, their `for:` durations cut to forDur.
func startPrometheus(t *testing.T, target string, forDur string) *promServer {
	t.Helper()
	bin := prometheusBinary(t)
	dir := t.TempDir()
	rules, err := os.ReadFile("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	rules = regexp.MustCompile(`(?m)^(\s+for:) \S+$`).ReplaceAll(rules, []byte("${1} "+forDur))
	rulesPath := filepath.Join(dir, "alerts.yml")
	if err := os.WriteFile(rulesPath, rules, 0o600); err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile("../../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer("@TARGET@", target, "@RULES@", rulesPath,
		"scrape_interval: 5s", "scrape_interval: 1s", "evaluation_interval: 5s", "evaluation_interval: 1s").Replace(string(tmpl))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), // #nosec G204 -- the test's own Prometheus
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus log (tail):\n%s", tail(string(b), 3000))
		}
	})
	p := &promServer{t: t, base: "http://" + addr}
	testsvc.Eventually(t, 20*time.Second, "prometheus ready", func() bool {
		r, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		_ = r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// api GETs a Prometheus API path and decodes its data into v.
func (p *promServer) api(path string, v any) error {
	r, err := http.Get(p.base + path)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%s: %w: %.200s", path, err, b)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", path, env.Error)
	}
	return json.Unmarshal(env.Data, v)
}

// alertState is the state of the named alert ("" when not pending or firing).
func (p *promServer) alertState(name string) string {
	var d struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.api("/api/v1/alerts", &d); err != nil {
		p.t.Logf("alerts: %v", err)
		return ""
	}
	for _, a := range d.Alerts {
		if a.Labels["alertname"] == name {
			return a.State
		}
	}
	return ""
}

// query reports whether an instant query returns any series.
func (p *promServer) query(q string) bool {
	var d struct {
		Result []json.RawMessage `json:"result"`
	}
	if err := p.api("/api/v1/query?query="+url.QueryEscape(q), &d); err != nil {
		p.t.Logf("query %s: %v", q, err)
		return false
	}
	return len(d.Result) > 0
}

// TestReaperStallFiresThroughPrometheus runs the app's loops with a fast
// reaper, a real Prometheus scraping its metrics with the project's rules
// (short `for:`), then stalls the reaper for real — a transaction holds
// an exclusive lock on the seat_holds table, as a long migration or a stuck
// admin session would — and waits for SeatdReaperStalled to fire through
// Prometheus's HTTP API, and to resolve once the lock is gone.
func TestReaperStallFiresThroughPrometheus(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) {
		c.ReaperInterval = 200 * time.Millisecond // stalled after 10 intervals: 2 s
		c.PGLockTimeout = 300 * time.Millisecond
	})
	testenv.Background(t, a)
	ops := httptest.NewServer(promhttp.HandlerFor(a.Registry, promhttp.HandlerOpts{}))
	t.Cleanup(ops.Close)
	p := startPrometheus(t, strings.TrimPrefix(ops.URL, "http://"), "2s")

	start := time.Now()
	testsvc.Eventually(t, 20*time.Second, "Prometheus sees a healthy reaper", func() bool {
		return p.query(`seatd_reaper_last_success_timestamp_seconds > 0`)
	})
	if s := p.alertState("SeatdReaperStalled"); s != "" {
		t.Fatalf("SeatdReaperStalled is %s before any fault", s)
	}

	ctx := context.Background()
	tx, err := a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	unlock := func() { _ = tx.Rollback(ctx) }
	t.Cleanup(unlock)
	if _, err := tx.Exec(ctx, "LOCK TABLE seat_holds IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	stalled := time.Now()
	testsvc.Eventually(t, 40*time.Second, "SeatdReaperStalled firing", func() bool {
		return p.alertState("SeatdReaperStalled") == "firing"
	})
	fired := time.Since(stalled)

	unlock()
	testsvc.Eventually(t, 20*time.Second, "SeatdReaperStalled resolved", func() bool {
		return p.alertState("SeatdReaperStalled") == ""
	})
	t.Logf("reaper stalled by a lock on seat_holds: alert firing after %v, resolved after the lock went; whole test %v",
		fired.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}
