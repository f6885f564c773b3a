package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// maxGrowth is how much allocs/op may grow over the baseline.
const maxGrowth = 0.20

const header = `# Allocation baseline of the hot paths, checked by scripts/allocs.sh (run by
# scripts/test.sh, so by CI): a run fails when a benchmark's allocs/op grow
# more than 20 % over the figure here. B/op is reported, not judged.
#
# To change it deliberately (a feature that must allocate, or a saving to
# lock in): run  scripts/allocs.sh --update  and commit this file with a
# message that says why the allocations changed.
#
# package benchmark allocs/op B/op
`

// result is one benchmark's figures.
type result struct {
	pkg, name     string
	allocs, bytes int64
}

func (r result) key() string { return r.pkg + " " + r.name }

var (
	pkgLine    = regexp.MustCompile(`^== (\S+)`)
	nameLine   = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?(\s|$)`)
	figureLine = regexp.MustCompile(`(\d+) B/op\s+(\d+) allocs/op`)
)

// parseRun reads benchmark output. Log lines may come between a
// benchmark's name and its figures: the figures belong to the last name.
func parseRun(r io.Reader) ([]result, error) {
	var out []result
	var pkg, name string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := pkgLine.FindStringSubmatch(line); m != nil {
			pkg, name = m[1], ""
			continue
		}
		if m := nameLine.FindStringSubmatch(line); m != nil {
			name = m[1]
		}
		if m := figureLine.FindStringSubmatch(line); m != nil {
			if name == "" || pkg == "" {
				return nil, fmt.Errorf("figures without a benchmark or package: %q", line)
			}
			b, _ := strconv.ParseInt(m[1], 10, 64)
			a, _ := strconv.ParseInt(m[2], 10, 64)
			out = append(out, result{pkg: pkg, name: name, allocs: a, bytes: b})
			name = ""
		}
	}
	return out, sc.Err()
}

// parseBaseline reads the baseline file: comments and blank lines
// skipped, then "package benchmark allocs bytes" per line.
func parseBaseline(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, fmt.Errorf("baseline line %d: want 4 fields, got %q", n, line)
		}
		a, err1 := strconv.ParseInt(f[2], 10, 64)
		b, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("baseline line %d: bad number in %q", n, line)
		}
		out = append(out, result{pkg: f[0], name: f[1], allocs: a, bytes: b})
	}
	return out, sc.Err()
}

func writeBaseline(path string, run []result) error {
	var sb strings.Builder
	sb.WriteString(header)
	for _, r := range run {
		fmt.Fprintf(&sb, "%s %s %d %d\n", r.pkg, r.name, r.allocs, r.bytes)
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

func pct(now, base int64) string {
	if base == 0 {
		if now == 0 {
			return "+0.0%"
		}
		return "+inf"
	}
	return fmt.Sprintf("%+.1f%%", 100*float64(now-base)/float64(base))
}

// compare prints the table and returns the failures.
func compare(w io.Writer, base, run []result) []string {
	now := map[string]result{}
	for _, r := range run {
		now[r.key()] = r
	}
	var fails []string
	fmt.Fprintf(w, "%-62s %10s %10s %8s %10s %10s %8s\n", "benchmark", "allocs", "now", "change", "B/op", "now", "change")
	seen := map[string]bool{}
	for _, b := range base {
		seen[b.key()] = true
		name := strings.TrimPrefix(b.pkg, "./internal/") + " " + b.name
		r, ok := now[b.key()]
		if !ok {
			fmt.Fprintf(w, "%-62s %10d %10s\n", name, b.allocs, "missing")
			fails = append(fails, name+": did not run")
			continue
		}
		mark := ""
		if float64(r.allocs) > float64(b.allocs)*(1+maxGrowth) {
			mark = "  FAIL"
			fails = append(fails, fmt.Sprintf("%s: %d allocs/op, baseline %d (%s, limit +%.0f%%)", name, r.allocs, b.allocs, pct(r.allocs, b.allocs), 100*maxGrowth))
		}
		fmt.Fprintf(w, "%-62s %10d %10d %8s %10d %10d %8s%s\n", name, b.allocs, r.allocs, pct(r.allocs, b.allocs), b.bytes, r.bytes, pct(r.bytes, b.bytes), mark)
	}
	var extra []string
	for k := range now {
		if !seen[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		fails = append(fails, k+": not in the baseline (scripts/allocs.sh --update)")
	}
	return fails
}

func main() {
	args := os.Args[1:]
	update := len(args) > 0 && args[0] == "--update"
	if update {
		args = args[1:]
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: allocs [--update] BASELINE < go-test-bench-output")
		os.Exit(2)
	}
	run, err := parseRun(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "allocs:", err)
		os.Exit(2)
	}
	if len(run) == 0 {
		fmt.Fprintln(os.Stderr, "allocs: no benchmark results in the input")
		os.Exit(2)
	}
	if update {
		if err := writeBaseline(args[0], run); err != nil {
			fmt.Fprintln(os.Stderr, "allocs:", err)
			os.Exit(2)
		}
		fmt.Printf("wrote %d benchmarks to %s: commit it, saying why the allocations changed\n", len(run), args[0])
		return
	}
	f, err := os.Open(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "allocs:", err)
		os.Exit(2)
	}
	defer f.Close()
	base, err := parseBaseline(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "allocs:", err)
		os.Exit(2)
	}
	fails := compare(os.Stdout, base, run)
	if len(fails) > 0 {
		fmt.Println("\nallocation guard FAILED:")
		for _, s := range fails {
			fmt.Println("  " + s)
		}
		fmt.Println("If the growth is deliberate: scripts/allocs.sh --update, and commit docs/allocs-baseline.txt saying why.")
		os.Exit(1)
	}
	fmt.Printf("allocation guard: %d benchmarks within +%.0f%% of the baseline\n", len(base), 100*maxGrowth)
}
