package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// TestRunTiny runs the whole scenario at toy sizes against a real embedded
// server and checks the machine-readable line: every stage reported, the
// counts add up, nothing was lost or reordered. It is the plumbing test;
// the figures themselves are not judged.
func TestRunTiny(t *testing.T) {
	for _, decode := range []string{DecodeFull, DecodeMetadata} {
		t.Run("decode "+decode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, Config{
				Objects: 50, Clients: []int{4}, Watchers: []int{5}, Events: 50, EventRate: 500,
				ListSizes: []int{60, 100}, ListReps: 3, Connections: 3, WatchDecode: decode,
			})
			if err != nil {
				t.Fatal(err)
			}
			got := printedJSON(t, res)
			for _, k := range []string{"scenario", "seed", "target", "in_process", "num_cpu", "server_version", "ops", "list", "watch", "targets"} {
				if _, ok := got[k]; !ok {
					t.Errorf("JSON lacks %q", k)
				}
			}
			if f := res.Failures(); len(f) > 0 {
				t.Fatalf("failures: %v", f)
			}

			ops := map[string]OpResult{}
			for _, o := range res.Ops {
				ops[o.Op] = o
			}
			for _, op := range []string{"create", "update", "get", "list", "delete"} {
				o, ok := ops[op]
				if !ok || o.Count == 0 || o.PerSec <= 0 || o.P99MS < o.P50MS {
					t.Errorf("%s: %+v", op, o)
				}
			}
			if ops["create"].Count != 50 {
				t.Errorf("created %d pods, want 50", ops["create"].Count)
			}

			if len(res.List) != 4 {
				t.Fatalf("list results: %+v", res.List)
			}
			for _, l := range res.List {
				if l.Bytes == 0 || l.P50MS <= 0 {
					t.Errorf("list %d %s: %+v", l.Pods, l.Encoding, l)
				}
			}
			// The namespace grew between sizes, so the LIST grew too.
			if res.List[2].Bytes <= res.List[0].Bytes {
				t.Errorf("LIST of 100 pods (%d bytes) is not larger than of 60 (%d)", res.List[2].Bytes, res.List[0].Bytes)
			}

			if len(res.Watch) != 1 {
				t.Fatalf("watch results: %+v", res.Watch)
			}
			w := res.Watch[0]
			if w.Expected != 5*50 || w.Delivered != w.Expected || w.Lost != 0 || w.OutOfOrder != 0 || w.Duplicates != 0 || w.ClosedEarly != 0 {
				t.Errorf("watch: %+v", w)
			}
			if w.Decode != decode || w.E2E.P99MS <= 0 || w.Rate <= 0 {
				t.Errorf("watch figures: %+v", w)
			}
		})
	}
}

func TestConfigRejects(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"unknown stage", Config{Stages: []string{"delete"}}},
		{"shrinking list sizes", Config{ListSizes: []int{100, 10}}},
		{"zero clients", Config{Clients: []int{0}}},
		{"unknown decode", Config{WatchDecode: "yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(context.Background(), tc.cfg); err == nil {
				t.Fatal("Run accepted the config")
			}
		})
	}
}

// printedJSON prints a scenario's result and returns its last line, the
// machine-readable JSON object every scenario ends with.
func printedJSON(t *testing.T, res interface{ Print(io.Writer) error }) map[string]any {
	t.Helper()
	var out bytes.Buffer
	if err := res.Print(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out.String())
	}
	return got
}
