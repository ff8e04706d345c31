// Package email holds the templ frame of seatd's emails and renders a
// message's two parts from one component: the HTML part as written, the
// plain-text part derived from it, so the two never say different things.
package email

import (
	"bytes"
	"context"
	"regexp"
	"strings"

	"github.com/a-h/templ"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Render renders content inside Page(l) and returns both parts of the
// message, for mail.Message's Text and HTML.
func Render(ctx context.Context, l Layout, content templ.Component) (text, htmlPart string, err error) {
	var b bytes.Buffer
	if err := Page(l).Render(templ.WithChildren(ctx, content), &b); err != nil {
		return "", "", err
	}
	htmlPart = b.String()
	text, err = Text(htmlPart)
	return text, htmlPart, err
}

// Text is the plain-text rendering of an HTML email: blocks and table
// rows on lines of their own, paragraphs apart, links followed by their
// address, images by their alt text; the head and hidden preheader left
// out.
func Text(s string) (string, error) {
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		return "", err
	}
	var w textWriter
	w.node(doc)
	return w.String(), nil
}

// textWriter accumulates text, collapsing whitespace as a browser would.
type textWriter struct {
	b strings.Builder
	// space: a space is owed before the next word.
	space bool
}

var spaces = regexp.MustCompile(`[ \t\r\n\f]+`)

func (w *textWriter) word(s string) {
	s = spaces.ReplaceAllString(s, " ")
	if s == "" {
		return
	}
	if s[0] == ' ' {
		w.space = true
		s = s[1:]
	}
	if s == "" {
		return
	}
	if w.space && w.b.Len() > 0 && !strings.HasSuffix(w.b.String(), "\n") {
		w.b.WriteByte(' ')
	}
	w.space = strings.HasSuffix(s, " ")
	w.b.WriteString(strings.TrimSuffix(s, " "))
}

// breaks ends the current line and leaves n-1 empty lines after it (at
// most: breaks do not add up).
func (w *textWriter) breaks(n int) {
	if n == 0 {
		return
	}
	w.space = false
	if w.b.Len() == 0 {
		return
	}
	s := w.b.String()
	have := len(s) - len(strings.TrimRight(s, "\n"))
	for ; have < n; have++ {
		w.b.WriteByte('\n')
	}
}

func (w *textWriter) String() string { return strings.TrimSpace(w.b.String()) + "\n" }

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func (w *textWriter) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.word(n.Data)
		return
	case html.ElementNode:
		if _, hidden := attr(n, "data-preheader"); hidden {
			return
		}
		switch n.DataAtom {
		case atom.Head, atom.Style, atom.Script:
			return
		case atom.Br:
			w.breaks(1)
			return
		case atom.Hr:
			w.breaks(1)
			w.word("----")
			w.breaks(2)
			return
		case atom.Img:
			if alt, _ := attr(n, "alt"); strings.TrimSpace(alt) != "" {
				w.word(" [" + strings.TrimSpace(alt) + "] ")
			}
			return
		}
	}
	before, after := blockBreaks(n)
	w.breaks(before)
	if n.DataAtom == atom.Li {
		w.word("- ")
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
	if n.DataAtom == atom.A {
		if href, _ := attr(n, "href"); href != "" && !strings.HasPrefix(href, "#") && !strings.HasPrefix(href, "cid:") &&
			!strings.Contains(w.b.String()[max(0, w.b.Len()-len(href)):], href) {
			w.word(" <" + href + ">")
		}
	}
	if n.DataAtom == atom.Td || n.DataAtom == atom.Th {
		w.word(" ")
	}
	w.breaks(after)
}

// blockBreaks is how many line ends an element starts and ends with: 2
// for paragraphs and headings (an empty line apart), 1 for other blocks
// and table rows, 0 inline.
func blockBreaks(n *html.Node) (before, after int) {
	if n.Type != html.ElementNode {
		return 0, 0
	}
	switch n.DataAtom {
	case atom.P, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Table, atom.Ul, atom.Ol, atom.Blockquote:
		return 2, 2
	case atom.Div, atom.Tr, atom.Li, atom.Section, atom.Header, atom.Footer:
		return 1, 1
	}
	return 0, 0
}
