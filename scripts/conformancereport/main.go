package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// suiteReport is the part of ginkgo's types.Report this command reads.
type suiteReport struct {
	SuitePath   string
	StartTime   time.Time
	EndTime     time.Time
	RunTime     time.Duration
	SpecReports []specReport
}

// specReport is the part of ginkgo's types.SpecReport this command reads.
type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	State                   string
	RunTime                 time.Duration
	ParallelProcess         int
	Failure                 *struct {
		Message  string
		Location struct {
			FileName   string
			LineNumber int
		}
	}
}

// result is one test that ran.
type result struct {
	Name, SIG, State, Reason string
	RunTime                  time.Duration
}

// counts are passed/failed/skipped tallies.
type counts struct{ Passed, Failed, Skipped int }

func (c *counts) add(state string) {
	switch state {
	case "passed":
		c.Passed++
	case "skipped":
		c.Skipped++
	default:
		c.Failed++
	}
}

// summary is what one report boils down to.
type summary struct {
	Total   counts
	PerSIG  map[string]*counts
	Failed  []result
	Skipped []result
	Wall    time.Duration
}

// bump counts one test of sig in state.
func (s *summary) bump(sig, state string) {
	c := s.PerSIG[sig]
	if c == nil {
		c = &counts{}
		s.PerSIG[sig] = c
	}
	c.add(state)
}

var sigRE = regexp.MustCompile(`\[sig-[a-z0-9-]+\]`)

// summarize reads a ginkgo JSON report (an array of suite reports).
func summarize(r io.Reader) (*summary, error) {
	var suites []suiteReport
	if err := json.NewDecoder(r).Decode(&suites); err != nil {
		return nil, fmt.Errorf("decoding the ginkgo JSON report: %w", err)
	}
	if len(suites) == 0 {
		return nil, errors.New("the ginkgo JSON report holds no suite")
	}
	s := &summary{PerSIG: map[string]*counts{}}
	for _, suite := range suites {
		wall := suite.RunTime
		if wall == 0 && !suite.EndTime.IsZero() {
			wall = suite.EndTime.Sub(suite.StartTime)
		}
		s.Wall += wall
		for _, sp := range suite.SpecReports {
			reason := ""
			if sp.Failure != nil {
				reason = firstLine(sp.Failure.Message)
			}
			if sp.LeafNodeType != "" && sp.LeafNodeType != "It" {
				// BeforeSuite, AfterSuite, ReportAfterSuite ...: not a
				// test, but when one fails the run failed, and says why.
				if sp.State != "passed" && sp.State != "skipped" && sp.State != "pending" {
					res := result{Name: "[" + sp.LeafNodeType + "]", SIG: "suite", State: sp.State, Reason: reason}
					s.Total.add(sp.State)
					s.bump(res.SIG, sp.State)
					s.Failed = append(s.Failed, res)
				}
				continue
			}
			if sp.State == "skipped" && reason == "" {
				continue // filtered out by focus/skip: never ran
			}
			if sp.State == "pending" {
				continue
			}
			name := strings.TrimSpace(strings.Join(append(append([]string{}, sp.ContainerHierarchyTexts...), sp.LeafNodeText), " "))
			sig := sigRE.FindString(name)
			if sig == "" {
				sig = "no sig"
			}
			res := result{Name: name, SIG: strings.Trim(sig, "[]"), State: sp.State, Reason: reason, RunTime: sp.RunTime}
			s.Total.add(sp.State)
			s.bump(res.SIG, sp.State)
			switch sp.State {
			case "passed":
			case "skipped":
				s.Skipped = append(s.Skipped, res)
			default:
				s.Failed = append(s.Failed, res)
			}
		}
	}
	byName := func(rs []result) {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	}
	byName(s.Failed)
	byName(s.Skipped)
	return s, nil
}

// firstLine is the first non-empty line of a failure message, trimmed to a
// length that fits a table.
func firstLine(msg string) string {
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 300 {
				l = l[:300] + "…"
			}
			return l
		}
	}
	return ""
}

func (s *summary) sigs() []string {
	var names []string
	for n := range s.PerSIG {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// writeText writes the plain summary; its last line is the totals.
func (s *summary) writeText(w io.Writer) {
	fmt.Fprintf(w, "wall time %s\n", s.Wall.Round(time.Second))
	fmt.Fprintf(w, "%-28s %7s %7s %7s\n", "SIG", "passed", "failed", "skipped")
	for _, n := range s.sigs() {
		c := s.PerSIG[n]
		fmt.Fprintf(w, "%-28s %7d %7d %7d\n", n, c.Passed, c.Failed, c.Skipped)
	}
	for _, f := range s.Failed {
		fmt.Fprintf(w, "FAILED %s\n    %s: %s\n", f.Name, f.State, f.Reason)
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", s.Total.Passed, s.Total.Failed, s.Total.Skipped)
}

// writeMarkdown writes the tables docs/conformance.md shows.
func (s *summary) writeMarkdown(w io.Writer) {
	fmt.Fprintf(w, "**%d passed, %d failed, %d skipped** — wall time %s\n\n",
		s.Total.Passed, s.Total.Failed, s.Total.Skipped, s.Wall.Round(time.Second))
	fmt.Fprintln(w, "| SIG | passed | failed | skipped |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, n := range s.sigs() {
		c := s.PerSIG[n]
		fmt.Fprintf(w, "| %s | %d | %d | %d |\n", n, c.Passed, c.Failed, c.Skipped)
	}
	if len(s.Failed) > 0 {
		fmt.Fprintln(w, "\n### Failing tests\n\n| test | reason |\n|---|---|")
		for _, f := range s.Failed {
			fmt.Fprintf(w, "| %s | %s |\n", mdEscape(f.Name), mdEscape(f.Reason))
		}
	}
	if len(s.Skipped) > 0 {
		fmt.Fprintln(w, "\n### Skipped tests\n\n| test | reason |\n|---|---|")
		for _, f := range s.Skipped {
			fmt.Fprintf(w, "| %s | %s |\n", mdEscape(f.Name), mdEscape(f.Reason))
		}
	}
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func main() {
	md := flag.String("markdown", "", "also write the summary as markdown tables to this file")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: conformancereport [--markdown FILE] ginkgo-report.json")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Arg(0), *md, os.Stdout, os.Stderr))
}

func run(path, md string, stdout, stderr io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(stderr, "conformancereport:", err)
		return 2
	}
	defer f.Close()
	s, err := summarize(f)
	if err != nil {
		fmt.Fprintf(stderr, "conformancereport: %s: %v\n", path, err)
		return 2
	}
	if md != "" {
		var b strings.Builder
		s.writeMarkdown(&b)
		if err := os.WriteFile(md, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(stderr, "conformancereport:", err)
			return 2
		}
	}
	s.writeText(stdout)
	if s.Total.Failed > 0 {
		return 1
	}
	return 0
}
