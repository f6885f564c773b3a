package server

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rudder-dev/rudder/internal/kubectltest"
)

// This file holds what e2e_kubectl_test.go needs to run kubectl and read
// what it prints.

// kubectlTimeout bounds the tests' own waits on kubectl (watches,
// `kubectl wait`); one run is bounded by kubectltest.Timeout.
const kubectlTimeout = 30 * time.Second

// kubectlEnv runs kubectl against one server with the admin kubeconfig and
// a private HOME, so the discovery cache is this test's own
// (internal/kubectltest does the running).
type kubectlEnv struct {
	*kubectltest.Kubectl
}

// result is what one kubectl run printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

func newKubectlEnv(t *testing.T) *kubectlEnv {
	t.Helper()
	srv, _ := startServer(t)
	return kubectlFor(t, srv.Kubeconfig)
}

// kubectlFor runs kubectl against the cluster of a kubeconfig.
func kubectlFor(t *testing.T, kubeconfig string) *kubectlEnv {
	t.Helper()
	return &kubectlEnv{kubectltest.New(t, kubeconfig)}
}

// run runs kubectl with args and stdin and returns its output and exit code.
func (k *kubectlEnv) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := k.Run(t, stdin, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// ok runs kubectl and fails the test unless it exits 0; it returns stdout.
func (k *kubectlEnv) ok(t *testing.T, args ...string) string {
	t.Helper()
	return k.OK(t, args...)
}

// step is one kubectl command and what it must print. Output is compared
// after trimming surrounding white space.
type step struct {
	name   string
	args   []string
	stdin  string
	code   int      // expected exit code
	out    string   // exact stdout, when set
	outHas []string // lines or fragments stdout must contain
	err    string   // exact stderr, when set
	errHas []string // fragments stderr must contain
	// check, when set, looks at the output further (tables).
	check func(t *testing.T, r result)
}

func (k *kubectlEnv) runSteps(t *testing.T, steps []step) {
	t.Helper()
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := k.run(t, s.stdin, s.args...)
			cmdline := "kubectl " + strings.Join(s.args, " ")
			if r.code != s.code {
				t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", cmdline, r.code, s.code, r.stdout, r.stderr)
			}
			if s.out != "" && strings.TrimSpace(r.stdout) != s.out {
				t.Errorf("%s: stdout\n%s\nwant\n%s", cmdline, r.stdout, s.out)
			}
			for _, frag := range s.outHas {
				if !strings.Contains(r.stdout, frag) {
					t.Errorf("%s: stdout lacks %q:\n%s", cmdline, frag, r.stdout)
				}
			}
			if s.err != "" && strings.TrimSpace(r.stderr) != s.err {
				t.Errorf("%s: stderr\n%s\nwant\n%s", cmdline, r.stderr, s.err)
			}
			for _, frag := range s.errHas {
				if !strings.Contains(r.stderr, frag) {
					t.Errorf("%s: stderr lacks %q:\n%s", cmdline, frag, r.stderr)
				}
			}
			if s.check != nil {
				s.check(t, r)
			}
		})
	}
}

// printedTable is one table as kubectl printed it: the header's column
// names and each row's cells by column name.
type printedTable struct {
	header []string
	rows   []map[string]string
}

// columnName matches one header column: words joined by single spaces
// ("NOMINATED NODE"). kubectl pads columns with at least three spaces.
var columnName = regexp.MustCompile(`\S+(?: \S+)*`)

// parseTables splits kubectl's human output into its tables (`get all`
// prints one per kind, separated by blank lines). Cells are cut at the
// header's column offsets, because a cell may be empty (a node's VERSION)
// and splitting on spaces would shift the rest of the row.
func parseTables(out string) []printedTable {
	var tables []printedTable
	var starts []int
	inTable := false
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			inTable = false
			continue
		}
		if !inTable {
			inTable = true
			tbl := printedTable{}
			starts = starts[:0]
			for _, loc := range columnName.FindAllStringIndex(line, -1) {
				starts = append(starts, loc[0])
				tbl.header = append(tbl.header, line[loc[0]:loc[1]])
			}
			tables = append(tables, tbl)
			continue
		}
		row := make(map[string]string, len(starts))
		for i, start := range starts {
			end := len(line)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(line))
			}
			if start < end {
				row[tables[len(tables)-1].header[i]] = strings.TrimSpace(line[start:end])
			} else {
				row[tables[len(tables)-1].header[i]] = ""
			}
		}
		tables[len(tables)-1].rows = append(tables[len(tables)-1].rows, row)
	}
	return tables
}

// row returns the row whose column col is value.
func (p printedTable) row(col, value string) (map[string]string, bool) {
	for _, r := range p.rows {
		if r[col] == value {
			return r, true
		}
	}
	return nil, false
}

// tableWith returns the table that has a row named name (`get all` prints
// one table per kind).
func tableWith(t *testing.T, tbls []printedTable, name string) printedTable {
	t.Helper()
	for _, tbl := range tbls {
		if _, ok := tbl.row("NAME", name); ok {
			return tbl
		}
	}
	t.Fatalf("no table has a row %s: %v", name, tbls)
	return printedTable{}
}

// checkTable asserts one printed table: its header exactly, and the row
// whose column key is keyValue containing cells (time-dependent columns
// such as AGE are left out of cells).
func checkTable(t *testing.T, tbl printedTable, header []string, key, keyValue string, cells map[string]string) {
	t.Helper()
	if !slices.Equal(tbl.header, header) {
		t.Errorf("header %q, want %q", tbl.header, header)
	}
	if keyValue == "" {
		return
	}
	row, ok := tbl.row(key, keyValue)
	if !ok {
		t.Errorf("no row with %s=%s in %v", key, keyValue, tbl.rows)
		return
	}
	for col, want := range cells {
		if got, ok := row[col]; !ok || got != want {
			t.Errorf("row %s: %s = %q, want %q (row %v)", keyValue, col, got, want, row)
		}
	}
}

// cols splits a header written with "|" between columns.
func cols(s string) []string { return strings.Split(s, "|") }

// tableCheck is a step check: the output is one table with this header
// and a row named name with these cells.
func tableCheck(header, name string, cells map[string]string) func(t *testing.T, r result) {
	return func(t *testing.T, r result) {
		tbls := parseTables(r.stdout)
		if len(tbls) != 1 {
			t.Fatalf("want one table, got %d:\n%s", len(tbls), r.stdout)
		}
		checkTable(t, tbls[0], cols(header), "NAME", name, cells)
	}
}
