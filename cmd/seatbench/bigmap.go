package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// BigMap is a buyer's seat map of a stadium-sized event in Chromium: what
// the first map costs to fetch and to make usable, what the page keeps in
// memory, and what one live frame costs the page.
type BigMap struct {
	Seats        int    `json:"seats"`
	Sections     int    `json:"sections"`
	SectionSeats int    `json:"seats_per_section"`
	Chromium     string `json:"chromium"`
	// Bytes is every response of the first map until it is live (page,
	// CSS, scripts, and the venue fetched again when the socket opens) as
	// received (Network.loadingFinished encodedDataLength: compressed
	// bodies and headers); Page is the HTML document alone, received and
	// decoded; Resync the venue fetched again.
	Bytes        int64 `json:"bytes_transferred"`
	PageBytes    int64 `json:"page_bytes_transferred"`
	PageRawBytes int64 `json:"page_bytes_decoded"`
	ResyncBytes  int64 `json:"resync_bytes_transferred"`
	Requests     int   `json:"requests"`
	// UsableMS is navigation start to the overview drawn and the open
	// section's seats clickable (wired by htmx), in the page's clock
	// (bigMapUsable); cold with empty caches, then again with CSS and
	// scripts cached.
	UsableMS     float64 `json:"first_usable_ms"`
	UsableWarmMS float64 `json:"usable_cached_ms"`
	// The browser's own navigation timing of the cold load.
	ResponseEndMS float64 `json:"response_end_ms"`
	DOMContentMS  float64 `json:"dom_content_loaded_ms"`
	DOMNodes      int     `json:"dom_nodes"`
	// SectionsInView counts the overview's sections whose outline is
	// wholly inside the 1 400 × 1 000 window at first sight.
	SectionsInView int     `json:"sections_in_view"`
	HeapUsedMB     float64 `json:"js_heap_used_mb"`
	HeapAfterGCMB  float64 `json:"js_heap_used_after_gc_mb"`
	// Frames: each held seat's frame timed in the page from the socket
	// message to its fragments swapped and the model updated
	// (htmx:wsBeforeMessage → htmx:wsAfterMessage), and to a forced style
	// and layout after it; Visible is the hold request sent → the page
	// showing the change (seat or section count), polled every 5 ms.
	Frames       int     `json:"frames"`
	FrameApply   Latency `json:"frame_apply_ms"`
	FrameLayout  Latency `json:"frame_apply_and_layout_ms"`
	FrameVisible Latency `json:"hold_to_visible_ms"`
	LoadAvg      string  `json:"load_average"`
}

// bigMapFrameProbe times the frame handling in the page; it is added by
// the bench after load, not part of the page.
const bigMapFrameProbe = `(function () {
	window.__frames = [];
	var t0 = 0;
	document.addEventListener("htmx:wsBeforeMessage", function () { t0 = performance.now(); });
	document.addEventListener("htmx:wsAfterMessage", function () {
		var t1 = performance.now();
		void document.body.offsetHeight; // style and layout now, not at the next frame
		window.__frames.push([t1 - t0, performance.now() - t0]);
	});
	return true;
})()`

// bigMapUsable records, in the page's clock (milliseconds since the
// navigation started), when the overview is drawn and a seat of the open
// section is in the page and wired by htmx (a click would hold it). It is
// added before any page script runs, and checks every 4 ms.
const bigMapUsable = `(function () {
	function usable() {
		var o = document.querySelector("svg.overview a[data-section-key]");
		var s = document.querySelector("#venue .seat");
		if (!o || !s || !window.htmx || !s["htmx-internal-data"]) return false;
		var r = o.getBoundingClientRect();
		return r.width > 0 && r.height > 0;
	}
	var id = setInterval(function () {
		if (usable()) { window.__usable = performance.now(); clearInterval(id); }
	}, 4);
})()`

// phaseBigMap opens the seat map of a 100 000-seat event (40 sections of
// 2 500) in headless Chromium as a signed-in buyer and measures the first
// map, the page's heap, and live frames for holds made through the API by
// another buyer, half in the open section and half elsewhere.
func (b *bench) phaseBigMap(ctx context.Context) error {
	main, err := b.procs.mainServer(ctx)
	if err != nil {
		return err
	}
	chromium, err := chromiumPath(ctx, b.root)
	if err != nil {
		return err
	}
	const seats, sections = 100_000, 40
	r := &BigMap{Seats: seats, Sections: sections, SectionSeats: seats / sections}
	if out, err := exec.CommandContext(ctx, chromium, "--version").Output(); err == nil {
		r.Chromium = strings.TrimSpace(string(out))
	}
	ev, ids, err := b.fx.newEventLayout(ctx, "big map", seats, sections, 8, true)
	if err != nil {
		return err
	}
	if err := b.load.warm(ctx, []*server{main}, ev); err != nil {
		return err
	}
	buyer, other := b.fx.buyers[0], b.fx.buyers[1]

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(b.tmp+"/chromium"), chromedp.WindowSize(1400, 1000))...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	target, err := chromedp.Run(tab, func(_ context.Context, t *chromedp.Target) (*chromedp.Target, error) { return t, nil })
	if err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	name, value, _ := strings.Cut(buyer.cookie, "=")
	if _, err := cdp.Call(tab, target, network.Enable, network.EnableParams{}); err != nil {
		return err
	}
	if _, err := cdp.Call(tab, target, network.SetCookie, network.SetCookieParams{Name: name, Value: value, URL: main.base}); err != nil {
		return err
	}
	mapURL := main.base + "/e/" + ev

	// Cold: every response counted until the map is usable and live (its
	// socket open and the venue fetched again once, as every map does when
	// its socket opens).
	var (
		mu     sync.Mutex
		kind   = map[network.RequestID]network.ResourceType{}
		perReq = map[network.RequestID]float64{}
	)
	listenCx, stopListen := context.WithCancel(tab)
	resp := cdp.Events(listenCx, target, network.ResponseReceived)
	done := cdp.Events(listenCx, target, network.LoadingFinished)
	var wg sync.WaitGroup
	wg.Go(func() {
		for e, err := range resp {
			if err != nil {
				return
			}
			mu.Lock()
			kind[e.RequestID] = e.Type
			mu.Unlock()
		}
	})
	wg.Go(func() {
		for e, err := range done {
			if err != nil {
				return
			}
			mu.Lock()
			perReq[e.RequestID] = e.EncodedDataLength
			mu.Unlock()
		}
	})
	if _, err := cdp.Call(tab, target, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: bigMapUsable}); err != nil {
		stopListen()
		wg.Wait()
		return err
	}
	usable := func() (float64, error) {
		if err := chromedp.Do(tab, chromedp.Navigate(mapURL)); err != nil {
			return 0, err
		}
		if err := chromedp.Do(tab, chromedp.Poll[chromedp.Void](`window.__usable > 0`, chromedp.WithPollingInterval(20*time.Millisecond),
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			return 0, fmt.Errorf("map never usable: %w", err)
		}
		at, err := chromedp.Run(tab, chromedp.Evaluate[float64](`window.__usable`))
		return round3(at), err
	}
	if r.UsableMS, err = usable(); err != nil {
		stopListen()
		wg.Wait()
		return err
	}
	live := chromedp.Poll[chromedp.Void](`document.body.getAttribute("data-live") === "connected" && !document.querySelector(".htmx-request")`,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))
	err = chromedp.Do(tab, live)
	stopListen()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("live socket: %w", err)
	}
	for id, n := range perReq {
		r.Bytes += int64(n)
		r.Requests++
		switch kind[id] {
		case network.ResourceTypeDocument:
			r.PageBytes = int64(n)
		case network.ResourceTypeXHR, network.ResourceTypeFetch:
			r.ResyncBytes += int64(n)
		}
	}
	nav, err := chromedp.Run(tab, chromedp.Evaluate[[]float64](`(function () {
		var n = performance.getEntriesByType("navigation")[0];
		var inView = Array.from(document.querySelectorAll("a[data-section-key]")).filter(function (a) {
			var r = a.getBoundingClientRect();
			return r.width > 0 && r.left >= 0 && r.top >= 0 && r.right <= window.innerWidth && r.bottom <= window.innerHeight;
		}).length;
		return [n.responseEnd, n.domContentLoadedEventEnd, n.decodedBodySize, document.getElementsByTagName("*").length, inView];
	})()`))
	if err != nil || len(nav) != 5 {
		return fmt.Errorf("navigation timing: %v", err)
	}
	r.ResponseEndMS, r.DOMContentMS, r.PageRawBytes, r.DOMNodes = round3(nav[0]), round3(nav[1]), int64(nav[2]), int(nav[3])
	r.SectionsInView = int(nav[4])

	// Warm: the same map again, CSS and scripts from the cache.
	if r.UsableWarmMS, err = usable(); err != nil {
		return err
	}
	if err := chromedp.Do(tab, live); err != nil {
		return fmt.Errorf("live socket: %w", err)
	}
	if r.HeapUsedMB, err = jsHeapMB(tab, target); err != nil {
		return err
	}
	if _, err := cdp.Call(tab, target, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
		return err
	}
	if r.HeapAfterGCMB, err = jsHeapMB(tab, target); err != nil {
		return err
	}

	// Frames: another buyer holds seats through the API, alternately in
	// the open (first) section and in the last one.
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](bigMapFrameProbe)); err != nil {
		return err
	}
	const holds = 20
	var visible []float64
	per := seats / sections
	for i := range holds {
		// Even seats: the generator sells or blocks only odd ones.
		section, idx := 0, 2+2*i
		shown := fmt.Sprintf(`(document.getElementById(%q) || document.body).getAttribute("data-status") === "held"`, "seat-"+ids[idx])
		if i%2 == 1 {
			section = sections - 1
			idx += section * per
			box := fmt.Sprintf(`document.querySelector('a[data-sec="%d"]')`, section)
			n, err := chromedp.Run(tab, chromedp.Evaluate[string](box+`.getAttribute("data-available")`))
			if err != nil {
				return err
			}
			var free int
			if _, err := fmt.Sscan(n, &free); err != nil {
				return fmt.Errorf("section %d's count %q", section, n)
			}
			shown = fmt.Sprintf(`%s.getAttribute("data-available") === "%d"`, box, free-1)
		}
		start := time.Now()
		code, ans, err := main.hold(ctx, other, ev, ids[idx])
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("hold %d: %d %v %s", i, code, err, ans.Error)
		}
		if err := chromedp.Do(tab, chromedp.Poll[chromedp.Void](shown, chromedp.WithPollingInterval(5*time.Millisecond),
			chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			return fmt.Errorf("hold %d never shown: %w", i, err)
		}
		visible = append(visible, ms(time.Since(start)))
	}
	frames, err := chromedp.Run(tab, chromedp.Evaluate[[][]float64](`window.__frames`))
	if err != nil {
		return err
	}
	var apply, layout []float64
	for _, f := range frames {
		if len(f) == 2 {
			apply, layout = append(apply, f[0]), append(layout, f[1])
		}
	}
	r.Frames = len(apply)
	r.FrameApply, r.FrameLayout, r.FrameVisible = latencyOf(apply), latencyOf(layout), latencyOf(visible)
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(l)); len(f) >= 3 {
			r.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	b.rep.BigMap = r
	b.log.printf("big map, %d seats: %.0f KB transferred (page %.0f KB, %.0f KB decoded) in %d requests; usable in %.0f ms (cached %.0f ms); %d of %d sections in view; %d DOM nodes; heap %.1f MB (%.1f after GC); frame applied p50/max %.2f/%.2f ms (with layout %.2f/%.2f); hold → shown p50/max %.0f/%.0f ms",
		seats, float64(r.Bytes)/1e3, float64(r.PageBytes)/1e3, float64(r.PageRawBytes)/1e3, r.Requests, r.UsableMS, r.UsableWarmMS, r.SectionsInView, sections, r.DOMNodes,
		r.HeapUsedMB, r.HeapAfterGCMB, r.FrameApply.P50, r.FrameApply.Max, r.FrameLayout.P50, r.FrameLayout.Max, r.FrameVisible.P50, r.FrameVisible.Max)
	return nil
}

// jsHeapMB is the page's JavaScript heap in use (Performance.getMetrics).
func jsHeapMB(ctx context.Context, t *chromedp.Target) (float64, error) {
	if _, err := cdp.Call(ctx, t, performance.Enable, performance.EnableParams{}); err != nil {
		return 0, err
	}
	m, err := cdp.Call(ctx, t, performance.GetMetrics, cdp.Empty{})
	if err != nil {
		return 0, err
	}
	i := slices.IndexFunc(m.Metrics, func(x *performance.Metric) bool { return x.Name == "JSHeapUsedSize" })
	if i < 0 {
		return 0, errors.New("no JSHeapUsedSize metric")
	}
	return round3(m.Metrics[i].Value / (1 << 20)), nil
}

// chromiumPath is SEATD_CHROMIUM, or what scripts/chromium.sh prints (it
// installs Debian's chromium when missing).
func chromiumPath(ctx context.Context, root string) (string, error) {
	if p := os.Getenv("SEATD_CHROMIUM"); p != "" {
		return p, nil
	}
	out, err := exec.CommandContext(ctx, root+"/scripts/chromium.sh").Output()
	if err != nil {
		return "", fmt.Errorf("scripts/chromium.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
