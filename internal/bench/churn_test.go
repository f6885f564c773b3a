package bench

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestChurnTiny churns pods and services for 3 s on a fresh embedded
// server: every write succeeds and shows up on the watch, every pod that
// lived reached Running, deletes happened, and --json prints one line.
func TestChurnTiny(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunChurn(ctx, ChurnConfig{Nodes: 20, Rate: 20, Duration: 3 * time.Second, Lifetime: 2500 * time.Millisecond, ServiceFraction: 0.25, Drain: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Failures(); len(f) > 0 {
		t.Fatalf("failures: %v", f)
	}
	if got := res.PodsCreated + res.ServicesCreated; got != 60 {
		t.Errorf("created %d objects, want 20/s × 3 s = 60", got)
	}
	if res.ServicesCreated == 0 || res.PodsCreated == 0 {
		t.Errorf("the seeded mix made %d pods and %d services, want both", res.PodsCreated, res.ServicesCreated)
	}
	// Objects created in the first 0.5 s are deleted 2.5 s later.
	if got := res.PodsDeleted + res.ServicesDeleted; got != 10 {
		t.Errorf("deleted %d objects, want 10", got)
	}
	if res.PodsRunning != res.PodsCreated || res.PodsDeletedBeforeRunning != 0 {
		t.Errorf("%d of %d pods reached Running (%d deleted first)", res.PodsRunning, res.PodsCreated, res.PodsDeletedBeforeRunning)
	}
	all := res.WatchMS["all"]
	if all.Count != 70 || all.P99 < all.P50 || all.P50 <= 0 {
		t.Errorf("watch latency over %d events (want 70): %+v", all.Count, all)
	}
	for _, k := range []string{"pods/create", "pods/delete", "services/create"} {
		if res.WatchMS[k].Count == 0 {
			t.Errorf("no watch latency for %s: %v", k, res.WatchMS)
		}
	}
	if res.APISource != APISourceServer || res.APIP99MS["create"] <= 0 || res.ClientP99MS["delete"] <= 0 {
		t.Errorf("API latency: server %v (%s %s), client %v", res.APIP99MS, res.APISource, res.APIError, res.ClientP99MS)
	}

	got := printedJSON(t, res)
	if got["scenario"] != "churn" {
		t.Errorf("JSON line: %v", got)
	}
	var out bytes.Buffer
	if err := Output(&out, true, res, nil); err != nil {
		t.Fatal(err)
	}
	line := uniformLine(t, out.String())
	if line["pods"] != float64(res.PodsCreated) || line["pod_startup_ms"] == nil {
		t.Errorf("uniform JSON: %v", line)
	}
}

func TestChurnPlan(t *testing.T) {
	cfg := ChurnConfig{Rate: 10, Duration: 2 * time.Second, Lifetime: time.Second, ServiceFraction: 0.5, Seed: 7}
	a, b := newChurnPlan(cfg), newChurnPlan(cfg)
	if len(a.ops) != 30 {
		t.Fatalf("%d writes, want 20 creates + 10 deletes", len(a.ops))
	}
	for i := range a.ops {
		if a.ops[i] != b.ops[i] || a.kinds[a.ops[i].obj] != b.kinds[b.ops[i].obj] {
			t.Fatalf("equal seeds gave different plans at %d", i)
		}
		if i > 0 && a.ops[i].at < a.ops[i-1].at {
			t.Fatalf("write %d is scheduled before write %d", i, i-1)
		}
	}
	cfg.Seed = 8
	c := newChurnPlan(cfg)
	same := true
	for i := range a.kinds {
		same = same && a.kinds[i] == c.kinds[i]
	}
	if same {
		t.Error("another seed gave the same mix of pods and services")
	}
}
