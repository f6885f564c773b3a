package framework

import "testing"

// TestTrialPicksTheFasterWay feeds the trial made-up section timings: it
// tries helpers, then alone, then runs the faster way (alone unless the
// helpers gain more than helpersGain) and starts over after the run.
func TestTrialPicksTheFasterWay(t *testing.T) {
	for _, tc := range []struct {
		name               string
		helpersNs, aloneNs int64
		wantAlone          bool
	}{
		{"helpers twice as fast", 50, 100, false},
		{"helpers slower", 200, 100, true},
		{"helpers within the gain", 95, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr trial
			if tr.solo() {
				t.Fatal("a new trial starts alone, want helpers first")
			}
			for range trialSections {
				tr.record(tc.helpersNs*10, 10)
			}
			if !tr.solo() {
				t.Fatal("after the helpers' trial, want the trial alone")
			}
			for range trialSections {
				tr.record(tc.aloneNs*10, 10)
			}
			if got := tr.solo(); got != tc.wantAlone {
				t.Fatalf("run alone = %v, want %v", got, tc.wantAlone)
			}
			for range runSections {
				tr.record(1, 1)
			}
			if tr.solo() {
				t.Fatal("after the run, want the helpers' trial again")
			}
		})
	}
}
