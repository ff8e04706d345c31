package email

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// content is a caller's body: a paragraph, a button and an inline image.
func content() templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if err := Paragraph().Render(templ.WithChildren(ctx, templ.Raw("Hello <b>Ada</b>, your tickets for <i>Hamlet</i> are attached.")), w); err != nil {
			return err
		}
		if err := Button("Confirm your email", templ.SafeURL("https://tickets.example/verify?t=abc")).Render(ctx, w); err != nil {
			return err
		}
		_, err := io.WriteString(w, `<img src="cid:qr-1" alt="QR code of ticket 1"><p>See <a href="https://tickets.example/b/1">your booking</a>.</p>`)
		return err
	})
}

// TestRenderBothParts: the HTML part is the layout around the content
// with inline styles only; the text part says the same in plain text,
// without the hidden preheader, with each link's address.
func TestRenderBothParts(t *testing.T) {
	text, html, err := Render(context.Background(), Layout{Org: "Demo Theatre", Title: "Your tickets",
		Preheader: "Two tickets for Hamlet", Footer: "You get this email because you bought tickets."}, content())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Find("style, link[rel=stylesheet], [class]").Length() != 0 {
		t.Errorf("the HTML has a stylesheet or classes, which mail clients drop:\n%s", html)
	}
	if strings.Contains(html, "&amp;#") || strings.Contains(html, "ZgotmplZ") {
		t.Errorf("a style was escaped twice or refused:\n%s", html)
	}
	if got := doc.Find("title").Text(); got != "Your tickets" {
		t.Errorf("title %q", got)
	}
	if got := doc.Find("a[href='https://tickets.example/verify?t=abc']").Text(); got != "Confirm your email" {
		t.Errorf("button %q", got)
	}
	if doc.Find(`img[src="cid:qr-1"]`).Length() != 1 {
		t.Errorf("inline image missing")
	}
	want := "Demo Theatre\n\nYour tickets\n\nHello Ada, your tickets for Hamlet are attached.\n\n" +
		"Confirm your email <https://tickets.example/verify?t=abc>\n\n[QR code of ticket 1]\n\n" +
		"See your booking <https://tickets.example/b/1>.\n\nYou get this email because you bought tickets.\n"
	if text != want {
		t.Errorf("text part:\n%s\nwant:\n%s", text, want)
	}
	if strings.Contains(text, "Two tickets for Hamlet") {
		t.Errorf("the preheader is in the text part")
	}
}
