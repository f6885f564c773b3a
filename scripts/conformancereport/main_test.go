package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report is a trimmed ginkgo JSON report in the shape ginkgo v2 writes:
// one spec of each kind the summary must tell apart.
const report = `[{"SuitePath":"/x/e2e","RunTime":125000000000,"SpecReports":[
 {"LeafNodeType":"SynchronizedBeforeSuite","State":"passed"},
 {"ContainerHierarchyTexts":["[sig-api-machinery] Namespaces [Serial]"],"LeafNodeText":"should patch a Namespace [Conformance]","LeafNodeType":"It","State":"passed","RunTime":3000000000},
 {"ContainerHierarchyTexts":["[sig-api-machinery] Watchers"],"LeafNodeText":"should observe add, update, and delete watch notifications on configmaps [Conformance]","LeafNodeType":"It","State":"failed","Failure":{"Message":"\nexpected watch event ADDED | got none\nmore detail","Location":{"FileName":"watch.go","LineNumber":60}}},
 {"ContainerHierarchyTexts":["[sig-auth] ServiceAccounts"],"LeafNodeText":"should mount an API token into pods [Conformance]","LeafNodeType":"It","State":"timedout","Failure":{"Message":"timed out"}},
 {"ContainerHierarchyTexts":["[sig-cli] Kubectl client"],"LeafNodeText":"should run on gce [Conformance]","LeafNodeType":"It","State":"skipped","Failure":{"Message":"Only supported for providers [gce]"}},
 {"ContainerHierarchyTexts":["[sig-storage] Volumes"],"LeafNodeText":"filtered out by focus","LeafNodeType":"It","State":"skipped"},
 {"ContainerHierarchyTexts":["NoSIG"],"LeafNodeText":"passes","LeafNodeType":"It","State":"passed"}
]}]`

func TestSummarize(t *testing.T) {
	s, err := summarize(strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != (counts{Passed: 2, Failed: 2, Skipped: 1}) {
		t.Errorf("totals %+v, want 2 passed, 2 failed, 1 skipped", s.Total)
	}
	want := map[string]counts{
		"sig-api-machinery": {Passed: 1, Failed: 1},
		"sig-auth":          {Failed: 1},
		"sig-cli":           {Skipped: 1},
		"no sig":            {Passed: 1},
	}
	if len(s.PerSIG) != len(want) {
		t.Errorf("SIGs %v, want %v", s.sigs(), want)
	}
	for sig, w := range want {
		if got := s.PerSIG[sig]; got == nil || *got != w {
			t.Errorf("%s: %+v, want %+v", sig, got, w)
		}
	}
	if len(s.Failed) != 2 || s.Failed[0].Reason != "expected watch event ADDED | got none" {
		t.Errorf("failed %+v", s.Failed)
	}
	if s.Wall.Seconds() != 125 {
		t.Errorf("wall %s, want 2m5s", s.Wall)
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body string
		rc         int
		lastLine   string
	}{
		{"failures exit 1", report, 1, "2 passed, 2 failed, 1 skipped"},
		{"all passed exit 0", `[{"SpecReports":[{"ContainerHierarchyTexts":["[sig-node] A"],"LeafNodeText":"b [Conformance]","LeafNodeType":"It","State":"passed"}]}]`, 0, "1 passed, 0 failed, 0 skipped"},
		{"a failed BeforeSuite is a failure", `[{"SpecReports":[{"LeafNodeType":"SynchronizedBeforeSuite","State":"failed","Failure":{"Message":"nodes not ready"}}]}]`, 1, "0 passed, 1 failed, 0 skipped"},
		{"not JSON", `<junit/>`, 2, ""},
		{"empty array", `[]`, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "r.json")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			md := filepath.Join(dir, "s.md")
			var out, errb bytes.Buffer
			if rc := run(p, md, &out, &errb); rc != tc.rc {
				t.Fatalf("rc %d, want %d; stderr %s", rc, tc.rc, errb.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if got := lines[len(lines)-1]; got != tc.lastLine {
				t.Errorf("last line %q, want %q", got, tc.lastLine)
			}
			if tc.rc == 2 {
				return
			}
			b, err := os.ReadFile(md)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "| SIG | passed | failed | skipped |") {
				t.Errorf("markdown lacks the SIG table:\n%s", b)
			}
		})
	}
	if rc := run(filepath.Join(dir, "missing.json"), "", &bytes.Buffer{}, &bytes.Buffer{}); rc != 2 {
		t.Errorf("missing file: rc %d, want 2", rc)
	}
}
