package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// compareCommand prints two result files side by side, every numeric
// figure they share with B/A beside it:
//
//	seatbench compare bench/results/baseline.json bench/results/latest.json
//
// Figures are named by their path in the JSON; an element of a list is
// named by what tells it apart from its siblings (buyers, processes,
// haproxy), or by its place in the list, so runs of different sizes line
// up where they measured the same thing.
func compareCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seatbench compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	all := fs.Bool("all", false, "also list figures only one of the files has")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: seatbench compare [-all] A.json B.json")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return errors.New("compare takes two result files")
	}
	a, err := flattenFile(fs.Arg(0))
	if err != nil {
		return err
	}
	b, err := flattenFile(fs.Arg(1))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "A: %s (%s)\nB: %s (%s)\n\n", fs.Arg(0), a.started, fs.Arg(1), b.started)
	var lines [][4]string
	onlyA, onlyB := 0, 0
	for _, k := range a.order {
		bv, ok := b.values[k]
		switch {
		case ok:
			lines = append(lines, [4]string{k, figure(a.values[k]), figure(bv), quotient(bv, a.values[k])})
		case *all:
			lines = append(lines, [4]string{k, figure(a.values[k]), "-", ""})
			onlyA++
		default:
			onlyA++
		}
	}
	for _, k := range b.order {
		if _, ok := a.values[k]; !ok {
			onlyB++
			if *all {
				lines = append(lines, [4]string{k, "-", figure(b.values[k]), ""})
			}
		}
	}
	printColumns(stdout, [4]string{"figure", "A", "B", "B/A"}, lines)
	if (onlyA > 0 || onlyB > 0) && !*all {
		fmt.Fprintf(stdout, "\n%d figures only in A, %d only in B (-all lists them)\n", onlyA, onlyB)
	}
	return nil
}

// printColumns prints the names left-aligned and the figures right-aligned.
func printColumns(w io.Writer, head [4]string, lines [][4]string) {
	var width [4]int
	for _, l := range append([][4]string{head}, lines...) {
		for i, c := range l {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, l := range append([][4]string{head}, lines...) {
		fmt.Fprintf(w, "%-*s  %*s  %*s  %*s\n", width[0], l[0], width[1], l[1], width[2], l[2], width[3], l[3])
	}
}

// flat is a result file's numeric figures by path, in the file's order.
type flat struct {
	started string
	order   []string
	values  map[string]float64
}

func flattenFile(path string) (*flat, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	f := &flat{values: map[string]float64{}}
	if err := f.walk(d, ""); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// walk reads one JSON value from d and keeps every number in it under
// its path. It reads tokens rather than decoding into maps so that the
// figures keep the order the run wrote them in.
func (f *flat) walk(d *json.Decoder, path string) error {
	t, err := d.Token()
	if err != nil {
		return err
	}
	switch x := t.(type) {
	case json.Number:
		v, err := x.Float64()
		if err != nil {
			return err
		}
		if _, dup := f.values[path]; !dup {
			f.order = append(f.order, path)
		}
		f.values[path] = v
	case string:
		if path == "started" {
			f.started = x
		}
	case json.Delim:
		switch x {
		case '{':
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return err
				}
				if err := f.walk(d, join(path, k.(string))); err != nil {
					return err
				}
			}
		case '[':
			// An element is named by what tells it apart from its
			// siblings, known only once it is read: read it whole first.
			seen := map[string]bool{}
			for i := 0; d.More(); i++ {
				var raw json.RawMessage
				if err := d.Decode(&raw); err != nil {
					return err
				}
				label := elementLabel(raw)
				if label == "" || seen[label] {
					label = strconv.Itoa(i)
				}
				seen[label] = true
				sub := json.NewDecoder(bytes.NewReader(raw))
				sub.UseNumber()
				if err := f.walk(sub, path+"["+label+"]"); err != nil {
					return err
				}
			}
		}
		_, err := d.Token() // the closing delimiter
		return err
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// elementLabel names a list element by the fields that tell the holds,
// fallback and multi-process levels apart.
func elementLabel(raw json.RawMessage) string {
	var e struct {
		Buyers *float64 `json:"buyers"`
		HTTP   struct {
			Procs float64 `json:"procs"`
		} `json:"http"`
		Balanced bool `json:"through_haproxy"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return ""
	}
	var parts []string
	if e.Buyers != nil {
		parts = append(parts, fmt.Sprintf("buyers=%g", *e.Buyers))
	}
	if e.HTTP.Procs > 1 {
		parts = append(parts, fmt.Sprintf("procs=%g", e.HTTP.Procs))
	}
	if e.Balanced {
		parts = append(parts, "haproxy")
	}
	return strings.Join(parts, ",")
}

// figure shows a value to three decimals at most.
func figure(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// quotient is b/a with two decimals; "=" when both are 0, "-" when only a is.
func quotient(b, a float64) string {
	if a == 0 {
		if b == 0 {
			return "="
		}
		return "-"
	}
	return fmt.Sprintf("%.2f", b/a)
}
