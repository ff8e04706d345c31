//go:build !fuzzing

package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seatd/internal/chart"
	"seatd/internal/testenv"
)

// setField sets a form control's value and fires the events a person's
// typing would (input, then change).
func setField(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(function () {
		var e = document.querySelector(%q);
		e.value = %q;
		e.dispatchEvent(new Event("input", {bubbles: true}));
		e.dispatchEvent(new Event("change", {bubbles: true}));
	})()`, sel, value))
}

// waitText waits until the element's text contains want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`((document.querySelector(%q) || {}).textContent || "").indexOf(%q) >= 0`, sel, want),
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second))
}

// TestBrowserChartEditor: an organizer goes from the nav to the charts
// page, builds a chart in the editor (categories, two seated sections from
// numbers, a GA area), edits single seats by mouse and by keyboard, sees
// the server's refusal of a nameless chart listed, saves, and the chart is
// stored as built. Screenshot: testoutput/browser/chart-editor.png.
func TestBrowserChartEditor(t *testing.T) {
	newTab := browser(t)
	a := testenv.App(t, generousLimits)
	srv := serveApp(t, a, options{}).ts
	tn := testenv.NewTenant(t, a, 0)

	ctx, cancel := context.WithTimeout(newTab(), 90*time.Second)
	defer cancel()
	problems := watchProblems(t, ctx)
	seat := func(s, r, k int) string { return fmt.Sprintf(`[data-seat="%d,%d,%d"]`, s, r, k) }
	steps := append(signIn(srv.URL, tn.Org.Slug, tn.Organizer.Email),
		chromedp.Click(css(`nav a[href="/admin/charts"]`)),
		chromedp.WaitVisible(css(`[data-testid=new-chart]`)),
		chromedp.Click(css(`[data-testid=new-chart]`)),
		chromedp.WaitVisible(css(`#ce-section-form`)),
		// Categories: the default one renamed, and a second.
		setField(`#ce-categories [data-testid=category] input[type=text]`, "stalls"),
		chromedp.Click(css(`#ce-add-category`)),
		setField(`#ce-categories [data-testid=category]:nth-child(2) input[type=text]`, "premium"),
		setField(`#ce-categories [data-testid=category]:nth-child(2) input[type=text]:nth-of-type(2)`, "Premium"),
		// Section A: 3 rows of 8, premium.
		setField(`#ce-section-form [name=rows]`, "3"),
		setField(`#ce-section-form [name=seats]`, "8"),
		setField(`#ce-section-form [name=category]`, "premium"),
		setField(`#ce-section-form [name=name]`, "Front"),
		chromedp.WaitVisible(css(`svg [stroke-dasharray]`)), // the live preview of the section being built
		chromedp.Click(css(`#ce-section-form button[type=submit]`)),
		waitText(`#ce-sections`, "3 rows, 24 seats"),
		// Section B: a curved block of 2 rows of 6 numbered right to left.
		setField(`#ce-section-form [name=rows]`, "2"),
		setField(`#ce-section-form [name=seats]`, "6"),
		setField(`#ce-section-form [name=curve]`, "1"),
		setField(`#ce-section-form [name=row_spacing]`, "2"),
		setField(`#ce-section-form [name=direction]`, "rtl"),
		setField(`#ce-section-form [name=category]`, "stalls"),
		chromedp.Click(css(`#ce-section-form button[type=submit]`)),
		waitText(`#ce-sections`, "2 rows, 12 seats"),
		// A standing area.
		setField(`#ce-section-form [name=kind]`, "ga"),
		setField(`#ce-section-form [name=label]`, "Floor"),
		setField(`#ce-section-form [name=capacity]`, "50"),
		chromedp.Click(css(`#ce-section-form button[type=submit]`)),
		waitText(`#ce-sections`, "standing, 50 places"),
		// Seat A-A-1 becomes a wheelchair space by mouse...
		chromedp.Click(css(seat(0, 0, 0))),
		chromedp.WaitVisible(css(`#ce-seat`)),
		chromedp.Click(css(`#ce-seat-accessible`)),
		chromedp.Click(css(`#ce-seat-close`)),
		// ...its neighbour a companion seat by keyboard...
		chromedp.Focus(css(seat(0, 0, 1))),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(css(`#ce-seat`)),
		chromedp.Focus(css(`#ce-seat-companion`)),
		chromedp.KeyEvent(" "),
		chromedp.KeyEvent("\u001b"), // Escape closes the panel
		// ...and the last seat of row C is removed.
		chromedp.Click(css(seat(0, 2, 7))),
		chromedp.Click(css(`#ce-seat-remove`)),
		// Focus goes on from the seat before the removed one.
		chromedp.Poll[chromedp.Void](`document.activeElement && document.activeElement.getAttribute("data-seat") === "0,2,6"`,
			chromedp.WithPollingTimeout(5*time.Second)),
		waitText(`#ce-count`, "35 seats, 50 standing in 3 sections"),
		// Saved without a name: the server's problem is listed, nothing saved.
		chromedp.Click(css(`#ce-save`)),
		waitText(`[data-testid=chart-problems]`, "name: is required"),
		chromedp.SendKeys(css(`#ce-name`), "Studio"),
		chromedp.Click(css(`#ce-save`)),
		waitText(`[data-testid=chart-status]`, "Saved version 1 of “Studio”: 35 seats in 3 sections."),
	)
	if err := chromedp.Do(ctx, steps...); err != nil {
		diagnose(t, ctx, "chart-editor")
		t.Fatalf("build a chart: %v", err)
	}
	// For the screenshot: the next section previewed (dashed) while a
	// seat is open for editing. Neither is saved.
	steps = []chromedp.Action[chromedp.Void]{
		setField(`#ce-section-form [name=kind]`, "seated"),
		setField(`#ce-section-form [name=name]`, "Balcony"),
		setField(`#ce-section-form [name=rows]`, "2"),
		setField(`#ce-section-form [name=seats]`, "12"),
		setField(`#ce-section-form [name=curve]`, "0"),
		setField(`#ce-section-form [name=row_spacing]`, "1"),
		chromedp.WaitVisible(css(`svg [stroke-dasharray]`)),
		chromedp.Click(css(seat(0, 0, 0))),
		chromedp.WaitVisible(css(`#ce-seat`)),
	}
	if err := chromedp.Do(ctx, steps...); err != nil {
		diagnose(t, ctx, "chart-editor-preview")
		t.Fatalf("preview: %v", err)
	}
	screenshot(t, ctx, "chart-editor.png")

	vs, err := a.Store.Charts.List(ctx, tn.Org.ID)
	if err != nil || len(vs) != 1 {
		t.Fatalf("charts %+v, %v", vs, err)
	}
	v, err := a.Store.Charts.LatestVersion(ctx, tn.Org.ID, vs[0].ChartID)
	if err != nil {
		t.Fatal(err)
	}
	c := v.Layout
	if err := chart.Validate(c); err != nil {
		t.Fatalf("stored chart is not valid: %v", err)
	}
	if c.Name != "Studio" || len(c.Categories) != 2 || c.Categories[1] != (chart.Category{Key: "premium", Name: "Premium", Color: c.Categories[1].Color}) {
		t.Fatalf("name or categories: %q %+v", c.Name, c.Categories)
	}
	a0 := c.Sections[0]
	if a0.Label != "A" || a0.Name != "Front" || len(a0.Rows) != 3 || a0.Rows[0].Label != "A" || a0.Rows[2].Label != "C" ||
		len(a0.Rows[2].Seats) != 7 || a0.Rows[0].Seats[0].Category != "premium" ||
		!a0.Rows[0].Seats[0].Accessible || !a0.Rows[0].Seats[1].Companion || a0.Rows[0].Seats[2].Accessible {
		t.Fatalf("section A: %+v", a0)
	}
	b := c.Sections[1]
	row := b.Rows[0].Seats
	if b.Label != "B" || len(b.Rows) != 2 || row[0].Number != 6 || row[5].Number != 1 || row[0].Y <= row[2].Y || b.Rows[0].Seats[0].Category != "stalls" {
		t.Fatalf("section B (right to left, curved): %+v", b)
	}
	if g := c.Sections[2]; g.Kind != chart.GA || g.Capacity != 50 || g.Label != "Floor" {
		t.Fatalf("GA section: %+v", g)
	}

	// The editor opens the saved chart again, and the list shows it.
	steps = []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(srv.URL + "/admin/charts/" + v.ChartID.String()),
		waitText(`#ce-count`, "35 seats, 50 standing in 3 sections"),
		chromedp.Navigate(srv.URL + "/admin/charts"),
		waitText(`[data-testid=charts]`, "Studio"),
	}
	if err := chromedp.Do(ctx, steps...); err != nil {
		diagnose(t, ctx, "chart-reopen")
		t.Fatalf("reopen: %v", err)
	}
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("[data-testid=charts]").textContent`))
	if err != nil || !strings.Contains(html, "35") {
		t.Fatalf("charts list: %q %v", html, err)
	}

	// Editing the reopened chart saves version 2; a CSV file with a bad
	// line is refused line by line; a good one becomes version 3 and is
	// shown.
	dir := t.TempDir()
	bad, good := filepath.Join(dir, "bad.csv"), filepath.Join(dir, "hall.csv")
	write := func(path string, lines ...string) {
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(bad, chart.CSVHeader, "A,1,1,0,0,stalls,", "A,1,1,1,0,stalls,", "A,1,3,2,0,stalls,wheelchair")
	write(good, chart.CSVHeader, "A,1,1,0,0,stalls,accessible", "A,1,2,1,0,stalls,companion", "A,2,1,0,1,premium,")
	steps = []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(srv.URL + "/admin/charts/" + v.ChartID.String()),
		waitText(`#ce-count`, "35 seats"),
		chromedp.Click(css(seat(1, 1, 0))),
		chromedp.Click(css(`#ce-seat-remove`)),
		chromedp.Click(css(`#ce-save`)),
		waitText(`[data-testid=chart-status]`, "Saved version 2 of “Studio”: 34 seats"),
		chromedp.SetUploadFiles(css(`#ce-file`), []string{bad}),
		waitText(`[data-testid=chart-problems]`, "line 3: repeats seat 1"),
		waitText(`[data-testid=chart-problems]`, "line 4: flags must be"),
		chromedp.SetUploadFiles(css(`#ce-file`), []string{good}),
		waitText(`[data-testid=chart-status]`, "Saved version 3 of “Studio”: 3 seats in 1 sections."),
		waitText(`#ce-count`, "3 seats in 1 sections"),
	}
	if err := chromedp.Do(ctx, steps...); err != nil {
		diagnose(t, ctx, "chart-edit")
		t.Fatalf("edit and upload: %v", err)
	}
	v3, err := a.Store.Charts.LatestVersion(ctx, tn.Org.ID, v.ChartID)
	if err != nil || v3.Version != 3 || v3.Seats != 3 || v3.Layout.Categories[1].Name != "Premium" {
		t.Fatalf("after the CSV: %+v %v", v3, err)
	}
	if v1, err := a.Store.Charts.VersionByID(ctx, tn.Org.ID, v.ID); err != nil || v1.Seats != 35 || !reflect.DeepEqual(v1.Layout, c) {
		t.Fatalf("version 1 changed: %+v %v", v1, err)
	}
	problems.check(t, "chart editor")
}
