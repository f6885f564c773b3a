package kubelet

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseCRILogLine(t *testing.T) {
	for _, tc := range []struct {
		line, text string
		partial    bool
		wantErr    bool
	}{
		{"2026-01-02T15:04:05.123456789Z stdout F hello world", "hello world", false, false},
		{"2026-01-02T15:04:05.123456789Z stderr P part ", "part ", true, false},
		{"2026-01-02T15:04:05Z stdout F", "", false, false},
		{"2026-01-02T15:04:05Z stdout F:x tagged", "tagged", false, false},
		{"2026-01-02T15:04:05Z stdout untagged text", "untagged text", false, false},
		{"garbage", "", false, true},
		{"2026-01-02T15:04:05Z pipe F x", "", false, true},
	} {
		l, err := parseCRILogLine([]byte(tc.line))
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err %v", tc.line, err)
			continue
		}
		if err == nil && (l.Text != tc.text || l.Partial != tc.partial) {
			t.Errorf("%q: got %q partial %v", tc.line, l.Text, l.Partial)
		}
	}
	l, _ := parseCRILogLine([]byte("2026-01-02T15:04:05.5Z stdout F x"))
	if !l.At.Equal(time.Date(2026, 1, 2, 15, 4, 5, 5e8, time.UTC)) {
		t.Errorf("time %v", l.At)
	}
}

// A file still being written: complete records come out, a record
// without its newline waits for the rest.
func TestLogReaderGrowingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(p, []byte("2026-01-02T15:04:05Z stdout F one\n2026-01-02T15:04:06Z stdout F tw"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := &logReader{r: bufio.NewReader(f)}
	if l, err := lr.next(); err != nil || l.Text != "one" {
		t.Fatalf("first: %v %v", l, err)
	}
	if _, err := lr.next(); err == nil {
		t.Fatal("an incomplete record came out")
	}
	af, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	af.WriteString("o\nbad line\n2026-01-02T15:04:07Z stderr F three\n")
	af.Close()
	var got []string
	for {
		l, err := lr.next()
		if err != nil {
			break
		}
		got = append(got, l.Text)
	}
	if strings.Join(got, ",") != "two,three" {
		t.Errorf("got %q", got)
	}
	all, err := readCRILog(p)
	if err != nil || len(all) != 3 {
		t.Errorf("readCRILog: %v %v", all, err)
	}
}

// A terminated container's message: the file it wrote, or with
// FallbackToLogsOnError and a failure, the end of its log.
func TestTerminationMessage(t *testing.T) {
	root := t.TempDir()
	o := newObserver(nil, root)
	logPath := filepath.Join(root, "c.log")
	var log strings.Builder
	for i := range 100 {
		log.WriteString("2026-01-02T15:04:05Z stdout F line " + string(rune('0'+i%10)) + "\n")
	}
	os.WriteFile(logPath, []byte(log.String()), 0o644)
	msgFile := terminationMessagePath(root, "uid", "c", 2)
	os.MkdirAll(filepath.Dir(msgFile), 0o755)

	c := &observedContainer{Name: "c", RestartCount: 2, ExitCode: 1, LogPath: logPath}
	if got := o.terminationMessage("uid", c, "File"); got != "" {
		t.Errorf("no file: %q", got)
	}
	if got := o.terminationMessage("uid", c, "FallbackToLogsOnError"); strings.Count(got, "\n") != fallbackLogLines {
		t.Errorf("fallback: %d lines", strings.Count(got, "\n"))
	}
	os.WriteFile(msgFile, []byte("bye"), 0o644)
	if got := o.terminationMessage("uid", c, "FallbackToLogsOnError"); got != "bye" {
		t.Errorf("the file wins: %q", got)
	}
	c.ExitCode = 0
	os.WriteFile(msgFile, nil, 0o644)
	if got := o.terminationMessage("uid", c, "FallbackToLogsOnError"); got != "" {
		t.Errorf("success takes no log: %q", got)
	}
}
