package views

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

func testCardForm() TestCardForm {
	return TestCardForm{Action: "/pay/test/pi_test_1", IntentID: "pi_test_1", ClientSecret: "pi_test_1_secret_x",
		Amount: "45.00 EUR", Description: "Hamlet · 2 seats",
		Cards: []TestCard{{"4242 4242 4242 4242", "succeeds at once"}, {"4000 0000 0000 3220", "processing first, succeeds a few seconds later"},
			{"4000 0000 0000 0002", "is declined"}}}
}

// TestTestCardPage: a card form (number, expiry, CVC, name) posting the
// intent and its client secret where the web layer says, the plain notice
// that no money moves, the three test cards, no card autofill.
func TestTestCardPage(t *testing.T) {
	doc := render(t, TestCardPage(Page{Title: "Pay", Asset: asset}, testCardForm()))
	if got := text(doc.Find("[data-testid=test-payments]").Text()); !strings.Contains(got, "Test payments — no money moves") {
		t.Errorf("notice %q", got)
	}
	form := doc.Find("form[data-testid=card-form]")
	if m, _ := form.Attr("method"); m != "post" {
		t.Errorf("method %q", m)
	}
	if a, _ := form.Attr("action"); a != "/pay/test/pi_test_1" {
		t.Errorf("action %q", a)
	}
	for name, want := range map[string]string{"intent": "pi_test_1", "client_secret": "pi_test_1_secret_x"} {
		in := form.Find("input[type=hidden][name=" + name + "]")
		if v, _ := in.Attr("value"); in.Length() != 1 || v != want {
			t.Errorf("hidden %s = %q", name, v)
		}
	}
	for _, name := range []string{"number", "expiry", "cvc", "name"} {
		in := form.Find("input[name=" + name + "]")
		if in.Length() != 1 {
			t.Errorf("no %s field", name)
			continue
		}
		id, _ := in.Attr("id")
		if doc.Find("label[for="+id+"]").Length() != 1 {
			t.Errorf("%s has no label", name)
		}
		if ac, _ := in.Attr("autocomplete"); ac != "off" {
			t.Errorf("%s autocomplete %q: a test form must not fill in a real card", name, ac)
		}
	}
	if got := text(form.Find("button[type=submit]").Text()); got != "Pay 45.00 EUR" {
		t.Errorf("button %q", got)
	}
	var cards []string
	doc.Find("[data-testid=test-cards] li").Each(func(_ int, li *goquery.Selection) { cards = append(cards, text(li.Text())) })
	want := []string{"4242 4242 4242 4242 succeeds at once", "4000 0000 0000 3220 processing first, succeeds a few seconds later",
		"4000 0000 0000 0002 is declined"}
	if strings.Join(cards, "|") != strings.Join(want, "|") {
		t.Errorf("cards %q", cards)
	}
	if doc.Find("[role=alert]").Length() != 0 || doc.Find("[aria-invalid]").Length() != 0 {
		t.Error("a fresh form shows an error")
	}
}

// TestTestCardPageRefused: after a refusal the page says why, marks the
// fields at fault and keeps what was typed, but never the CVC.
func TestTestCardPageRefused(t *testing.T) {
	f := testCardForm()
	f.Number, f.Expiry, f.Name = "4242 4242 4242 4241", "01/20", "Ada"
	f.Error = "check the card details"
	f.Fields = map[string]string{"number": "is not a valid card number", "expiry": "must be this month or later, as MM/YY"}
	doc := render(t, TestCardPage(Page{Title: "Pay", Asset: asset}, f))
	if got := text(doc.Find("[role=alert]").Text()); got != "check the card details" {
		t.Errorf("alert %q", got)
	}
	for name, msg := range f.Fields {
		in := doc.Find("input[name=" + name + "]")
		if v, _ := in.Attr("aria-invalid"); v != "true" {
			t.Errorf("%s not marked invalid", name)
		}
		by, _ := in.Attr("aria-describedby")
		if got := text(doc.Find("#" + by).Text()); got != msg {
			t.Errorf("%s error %q", name, got)
		}
	}
	for name, want := range map[string]string{"number": f.Number, "expiry": f.Expiry, "name": "Ada", "cvc": ""} {
		if v, _ := doc.Find("input[name=" + name + "]").Attr("value"); v != want {
			t.Errorf("%s value %q, want %q", name, v, want)
		}
	}
	if _, bad := doc.Find("input[name=cvc]").Attr("aria-invalid"); bad {
		t.Error("cvc marked invalid")
	}
}

// TestTestCardPageNoInlineCode: the page runs under the CSP (script-src
// 'self', style-src 'self'): no inline script, handler or style.
func TestTestCardPageNoInlineCode(t *testing.T) {
	doc := render(t, TestCardPage(Page{Title: "Pay", Asset: asset}, testCardForm()))
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		if _, ok := s.Attr("src"); !ok || strings.TrimSpace(s.Text()) != "" {
			t.Errorf("inline script %q", s.Text())
		}
	})
	if doc.Find("style, [style]").Length() != 0 {
		t.Error("inline style")
	}
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("inline handler %s on <%s>", a.Key, goquery.NodeName(s))
			}
		}
	})
}
