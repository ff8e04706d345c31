package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestPerfRowsJudgeTheNewRows: the waiting room, payments and sign-in
// surge rows are judged on their figures, and say "not measured" when
// their phase did not run.
func TestPerfRowsJudgeTheNewRows(t *testing.T) {
	verdicts := func(r *Report) map[string]string {
		out := map[string]string{}
		for _, row := range perfRows(r) {
			for _, key := range []string{"seatd memory a visitor", "admission rate", "while the line waits", "payments", "sign-in surge"} {
				if strings.Contains(row.What, key) {
					out[key] = row.Verdict
				}
			}
		}
		return out
	}
	v := verdicts(&Report{})
	for _, key := range []string{"payments", "sign-in surge"} {
		if v[key] != notMeasured {
			t.Errorf("%s without its phase: %q, want %q", key, v[key], notMeasured)
		}
	}
	r := &Report{
		Room: &Room{Visitors: 100_000, RatePerMinute: 1200, AdmittedPerMinute: 1195, HeapPerVisitorJoined: 1800, HeapPerVisitorPolling: 2100,
			Holds: &Load{Latency: Latency{P99: 30}}, HoldsRef: &Load{Latency: Latency{P99: 28}}},
		Payments: &Payments{Buyers: 200, On: &SaleRun{Sales: 2000, PerSec: 60}, Off: &SaleRun{Sales: 2000, PerSec: 100}},
		SignIns:  &SignIns{Total: 1000, Succeeded: 1000, Refusals: map[string]int{"503": 3}, NoRetryAfter: 1},
	}
	v = verdicts(r)
	want := map[string]string{"seatd memory a visitor": notMet, "admission rate": met, "while the line waits": met, "payments": met, "sign-in surge": notMet}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("%s: %q, want %q", k, v[k], w)
		}
	}
	r.Payments.On.SeatsTwice = 1
	r.Room.AdmittedPerMinute = 1270
	v = verdicts(r)
	if v["payments"] != notMet || v["admission rate"] != notMet {
		t.Errorf("a seat sold twice, 6 %% over the rate: payments %q, admission %q; want both %q", v["payments"], v["admission rate"], notMet)
	}
}

// TestPerformanceDocCurrent: the committed docs/performance.md is what
// `make perf-doc` renders from the committed bench/results/latest.json
// and its template, so no figure in it is edited by hand or left behind
// by a new run.
func TestPerformanceDocCurrent(t *testing.T) {
	const results, tmpl, doc = "bench/results/latest.json", "bench/performance.md.tmpl", "docs/performance.md"
	t.Chdir("../..")
	want, err := renderPerfDoc(results, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what %s renders from %s: run 'make perf-doc' and commit it", doc, tmpl, results)
	}
}

// TestTrueCeilingCharged: the true ceiling's reference is the shared
// statement's rate with Redis's and the load generator's CPU per hold
// added to each of its holds, and the row is judged on seatd's rate
// against that.
func TestTrueCeilingCharged(t *testing.T) {
	h := &HoldLevel{Buyers: 200,
		HTTP:   &Load{Rate: 500, CPUPerHold: CPU{Seatd: 900, Postgres: 700, Redis: 300, Client: 700}},
		Shared: &Load{Rate: 1000, CPUPerHold: CPU{Postgres: 1500, Client: 500}, Note: "8 a statement"}}
	h.ratios()
	// 2 000 µs a hold in the reference, 1 000 µs charged: 1000 × 2000/3000.
	if h.SharedCharged < 666.6 || h.SharedCharged > 666.7 || h.CeilingRatio < 0.74 || h.CeilingRatio > 0.76 {
		t.Fatalf("charged %v, ratio %v; want 666.667 and 0.75", h.SharedCharged, h.CeilingRatio)
	}
	verdictOf := func(r *Report) string {
		for _, row := range perfRows(r) {
			if strings.Contains(row.What, "true ceiling") {
				return row.Verdict
			}
		}
		return ""
	}
	if v := verdictOf(&Report{Holds: []*HoldLevel{h}}); v != met {
		t.Errorf("0.75 of the charged reference: %q, want %q", v, met)
	}
	h.HTTP.Rate = 400
	h.ratios()
	if v := verdictOf(&Report{Holds: []*HoldLevel{h}}); v != notMet {
		t.Errorf("0.60 of the charged reference: %q, want %q", v, notMet)
	}
	run := h.HTTP.CPUPerHold
	h.HTTP.CPUPerHold = CPU{}
	h.ratios()
	if v := verdictOf(&Report{Holds: []*HoldLevel{h}}); v != notMeasured {
		t.Errorf("seatd's run without CPU figures, nothing to charge: %q, want %q", v, notMeasured)
	}
	h.HTTP.CPUPerHold = run
	h.Shared.CPUPerHold = CPU{}
	h.ratios()
	if v := verdictOf(&Report{Holds: []*HoldLevel{h}}); v != notMeasured {
		t.Errorf("no CPU figures to charge: %q, want %q", v, notMeasured)
	}
}
