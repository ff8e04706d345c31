package auth_test

import (
	"runtime"
	"testing"

	"seatd/internal/auth"
)

// TestDefaultHashingLeavesHalfTheCPUs: password hashes at once default to
// half the CPUs the process may use (at least one), so a surge of
// sign-ins leaves the other half to the holds.
func TestDefaultHashingLeavesHalfTheCPUs(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(was)
	for _, tc := range []struct{ procs, want int }{{1, 1}, {2, 1}, {3, 1}, {4, 2}, {8, 4}} {
		runtime.GOMAXPROCS(tc.procs)
		if got := auth.DefaultHashing(); got != tc.want {
			t.Errorf("GOMAXPROCS %d: %d hashing slots, want %d", tc.procs, got, tc.want)
		}
	}
}
