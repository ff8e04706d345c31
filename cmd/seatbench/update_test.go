package main

import (
	"testing"
	"time"
)

// TestUpdateDelaysWaitForTheAnswerShowingTheNewPlace: two admission
// steps move the line; a visitor's update is its first answer read after
// a step showing the place the step gave it (or better), so an answer
// read after the step that still shows the old place does not count,
// and a visitor admitted by a step is no longer waiting for its place.
func TestUpdateDelaysWaitForTheAnswerShowingTheNewPlace(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tickAt := func(ms int, admitted int64) tick {
		return tick{atMS: float64(t0.UnixMilli() + int64(ms)), admitted: admitted}
	}
	// Steps at 0 (2 admitted, in all) and 1000 ms (4 in all).
	ticks := []tick{tickAt(0, 2), tickAt(1000, 4)}
	rank := []int64{9, 2, -1, 5}
	answers := [][]answer{
		// rank 9: place 8 after the first step, 6 after the second.
		{{done: at(-500), gap: 5 * time.Second, position: 10},
			{done: at(300), gap: 800 * time.Millisecond, position: 10}, // read after the step, still the old place
			{done: at(4300), gap: 4 * time.Second, position: 6}},       // shows both steps
		// rank 2: place 1 after the first step, admitted at the second.
		{{done: at(-100), gap: 5 * time.Second, position: 3},
			{done: at(2000), gap: 2 * time.Second, admitted: true}},
		// not in line
		{{done: at(50), position: 0}},
		// rank 5: place 4, then 2; never asks again after the first step.
		{{done: at(200), gap: time.Second, position: 4}},
	}
	delay, gap, late, unseen := updateDelays(answers, rank, ticks)
	want := []float64{4300, 3300, 2000, 200}
	if len(delay) != len(want) {
		t.Fatalf("delays %v, want %v", delay, want)
	}
	for i := range want {
		if delay[i] != want[i] {
			t.Fatalf("delays %v, want %v", delay, want)
		}
	}
	if gap[0] != 4000 || late[0] != 300 || gap[2] != 2000 || late[2] != 0 || gap[3] != 1000 || late[3] != -800 {
		t.Fatalf("gaps %v, past the gap %v", gap, late)
	}
	if unseen != 1 {
		t.Fatalf("%d unseen, want 1 (the last visitor after the second step)", unseen)
	}
}
