package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// Commands that read result files instead of running the bench. Each
// works offline: no services, no seatd.
var resultCommands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"table":    tableCommand,
	"compare":  compareCommand,
	"perf-doc": perfDocCommand,
}

// readReport decodes a result file written by a run (bench/results/latest.json).
func readReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// tableCommand prints a result file's table as a run prints it, its
// targets judged as docs/performance.md judges them now:
// seatbench table bench/results/latest.json.
func tableCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("seatbench table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: seatbench table RESULT.json") }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("table takes one result file")
	}
	r, err := readReport(fs.Arg(0))
	if err != nil {
		return err
	}
	r.evaluate()
	r.printTable(stdout)
	return nil
}
