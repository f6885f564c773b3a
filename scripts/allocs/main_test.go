package main

import (
	"io"
	"strings"
	"testing"
)

// A log line between a benchmark's name and its figures, as the API
// server's benchmarks print them, must not lose the figures.
const sampleRun = `== ./internal/apiserver/
goos: linux
BenchmarkTrackStatusUpdate-2       	2026/11/28 03:16:53 INFO embedded etcd ready dir=/tmp/x
     200	   1696201 ns/op	    293895 cpu-ns/op	   70788 B/op	     600 allocs/op
BenchmarkManagedFieldsOverhead/create/with-2         	     200	     59648 ns/op	   21932 B/op	     316 allocs/op
PASS
== ./internal/scheduler/
BenchmarkAssume-2   	     200	      1052 ns/op	      64 B/op	       2 allocs/op
`

func TestParseRun(t *testing.T) {
	got, err := parseRun(strings.NewReader(sampleRun))
	if err != nil {
		t.Fatal(err)
	}
	want := []result{
		{"./internal/apiserver/", "BenchmarkTrackStatusUpdate", 600, 70788},
		{"./internal/apiserver/", "BenchmarkManagedFieldsOverhead/create/with", 316, 21932},
		{"./internal/scheduler/", "BenchmarkAssume", 2, 64},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestCompare(t *testing.T) {
	base := []result{{"p", "A", 100, 1000}, {"p", "B", 10, 10}}
	cases := []struct {
		name  string
		run   []result
		fails int
	}{
		{"same", []result{{"p", "A", 100, 1000}, {"p", "B", 10, 10}}, 0},
		{"20% more allocs is allowed", []result{{"p", "A", 120, 1000}, {"p", "B", 12, 10}}, 0},
		{"21% more fails", []result{{"p", "A", 121, 1000}, {"p", "B", 10, 10}}, 1},
		{"bytes are not judged", []result{{"p", "A", 100, 9000}, {"p", "B", 10, 10}}, 0},
		{"fewer allocs pass", []result{{"p", "A", 1, 1000}, {"p", "B", 1, 10}}, 0},
		{"missing benchmark fails", []result{{"p", "A", 100, 1000}}, 1},
		{"benchmark not in the baseline fails", []result{{"p", "A", 100, 1000}, {"p", "B", 10, 10}, {"p", "C", 1, 1}}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if fails := compare(io.Discard, base, c.run); len(fails) != c.fails {
				t.Errorf("fails = %q, want %d", fails, c.fails)
			}
		})
	}
}

func TestParseBaselineRejectsBadLines(t *testing.T) {
	for _, in := range []string{"p A 1\n", "p A x 1\n", "p A 1 2 3\n"} {
		if _, err := parseBaseline(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	got, err := parseBaseline(strings.NewReader(header + "p A 1 2\n"))
	if err != nil || len(got) != 1 || got[0] != (result{"p", "A", 1, 2}) {
		t.Errorf("got %+v, %v", got, err)
	}
}
