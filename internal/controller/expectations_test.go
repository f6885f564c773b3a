package controller

import (
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	const key = "default/web"
	tests := []struct {
		name string
		// steps run against a fresh record; the clock starts at t0.
		steps func(e *Expectations, clk *clocktesting.FakeClock)
		want  bool
	}{
		{
			name:  "no record: a new or restarted controller may act",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {},
			want:  true,
		},
		{
			name: "creations pending",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 3)
				e.CreationObserved(key)
				e.CreationObserved(key)
			},
			want: false,
		},
		{
			name: "all creations seen",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 2)
				e.CreationObserved(key)
				e.CreationObserved(key)
			},
			want: true,
		},
		{
			name: "surprise creations go negative and stay satisfied",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 1)
				e.CreationObserved(key)
				e.CreationObserved(key)
			},
			want: true,
		},
		{
			name: "a deletion seen twice counts once",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectDeletions(key, []string{"default/a", "default/b"})
				e.DeletionObserved(key, "default/a") // deletionTimestamp set
				e.DeletionObserved(key, "default/a") // removed from the store
			},
			want: false,
		},
		{
			name: "all deletions seen",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectDeletions(key, []string{"default/a", "default/b"})
				e.DeletionObserved(key, "default/b")
				e.DeletionObserved(key, "default/a")
			},
			want: true,
		},
		{
			name: "deleting a pod nobody waits for changes nothing",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectDeletions(key, []string{"default/a"})
				e.DeletionObserved(key, "default/z")
			},
			want: false,
		},
		{
			name: "failed creates lowered by the caller",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 4)
				e.LowerExpectations(key, 3, nil)
				e.CreationObserved(key)
			},
			want: true,
		},
		{
			name: "a record older than the timeout is ignored",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.ExpectCreations(key, 5)
				clk.Step(ExpectationsTimeout + time.Second)
			},
			want: true,
		},
		{
			name: "a record just under the timeout still holds",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.ExpectCreations(key, 5)
				clk.Step(ExpectationsTimeout - time.Second)
			},
			want: false,
		},
		{
			name: "ExpectCreations replaces pending deletions",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectDeletions(key, []string{"default/a"})
				e.ExpectCreations(key, 0)
			},
			want: true,
		},
		{
			name: "raise adds to the record",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 1)
				e.RaiseExpectations(key, 1, []string{"default/x"})
				e.CreationObserved(key)
				e.CreationObserved(key)
			},
			want: false, // default/x not yet deleted
		},
		{
			name: "deleted object starts clean",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreations(key, 7)
				e.DeleteExpectations(key)
			},
			want: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			e := NewExpectations(clk)
			tt.steps(e, clk)
			if got := e.SatisfiedExpectations(key); got != tt.want {
				adds, dels, ok := e.Pending(key)
				t.Errorf("SatisfiedExpectations = %v, want %v (adds %d, deletes %d, record %v)", got, tt.want, adds, dels, ok)
			}
		})
	}
}

// Event handlers and syncs touch the record from many goroutines.
func TestExpectationsConcurrent(t *testing.T) {
	e := NewExpectations(nil)
	const key, n = "ns/rs", 200
	e.ExpectCreations(key, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.CreationObserved(key)
			e.SatisfiedExpectations(key)
		}()
	}
	wg.Wait()
	if adds, _, _ := e.Pending(key); adds != 0 {
		t.Fatalf("adds = %d after %d observations, want 0", adds, n)
	}
	if !e.SatisfiedExpectations(key) {
		t.Fatal("not satisfied after every creation was observed")
	}
}
