package monitor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// readRecords returns "stream tag text" for each record of path and its
// rotated files, oldest first, checking each timestamp.
func readRecords(t *testing.T, path string) []string {
	t.Helper()
	files, _ := filepath.Glob(path + "*")
	var recs []string
	for i := len(files) - 1; i >= 0; i-- { // highest suffix (oldest) first; path itself sorts first
		b, err := os.ReadFile(files[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if line == "" {
				continue
			}
			parts := strings.SplitN(line, " ", 4)
			if len(parts) != 4 {
				t.Fatalf("bad record %q", line)
			}
			if _, err := time.Parse(time.RFC3339Nano, parts[0]); err != nil {
				t.Errorf("timestamp %q: %v", parts[0], err)
			}
			recs = append(recs, strings.Join(parts[1:], " "))
		}
	}
	return recs
}

func TestLog(t *testing.T) {
	long := strings.Repeat("x", MaxLineSize)
	for _, tc := range []struct {
		name     string
		writes   []string
		maxSize  int64
		maxFiles int
		want     []string
		files    int
	}{
		{name: "lines joined across reads, CR stripped, last line unterminated",
			writes: []string{"one\ntw", "o\r\n", "last"}, maxSize: 1 << 20, maxFiles: 2,
			want: []string{"stdout F one", "stdout F two", "stdout F last"}, files: 1},
		{name: "long line split into P pieces",
			writes: []string{long + long + "end\n"}, maxSize: 1 << 20, maxFiles: 2,
			want: []string{"stdout P " + long, "stdout P " + long, "stdout F end"}, files: 1},
		{name: "empty line",
			writes: []string{"\n"}, maxSize: 1 << 20, maxFiles: 2,
			want: []string{"stdout F "}, files: 1},
		{name: "rotation keeps maxFiles files",
			writes: []string{"a1\na2\na3\na4\na5\na6\na7\na8\n"}, maxSize: 100, maxFiles: 3,
			// A record is 34 to 43 bytes: two per file, the oldest two dropped.
			want: []string{"stdout F a3", "stdout F a4", "stdout F a5", "stdout F a6", "stdout F a7", "stdout F a8"}, files: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "c.log")
			l, err := OpenLog(path, tc.maxSize, tc.maxFiles)
			if err != nil {
				t.Fatal(err)
			}
			r, w, _ := os.Pipe()
			done := make(chan struct{})
			var teed strings.Builder
			go func() { CopyLines(r, l, "stdout", func(p []byte) { teed.Write(p) }); close(done) }()
			for _, s := range tc.writes {
				w.Write([]byte(s))
			}
			w.Close()
			<-done
			l.Close()
			if got := readRecords(t, path); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("records\n%q\nwant\n%q", got, tc.want)
			}
			if files, _ := filepath.Glob(path + "*"); len(files) != tc.files {
				t.Errorf("files %v, want %d", files, tc.files)
			}
			if teed.String() != strings.Join(tc.writes, "") {
				t.Errorf("tee got %d bytes, want the raw output", teed.Len())
			}
		})
	}
}

func TestLogReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	l, err := OpenLog(path, 1<<20, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.record("stdout", false, []byte("before"))
	// Someone else rotates the file; Reopen makes later records land in
	// a new one.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	l.record("stderr", false, []byte("after"))
	if got := readRecords(t, path); !reflect.DeepEqual(got, []string{"stdout F before", "stderr F after"}) {
		t.Errorf("got %q", got)
	}
	if b, _ := os.ReadFile(path); !strings.HasSuffix(string(b), " stderr F after\n") || strings.Count(string(b), "\n") != 1 {
		t.Errorf("new file holds %q", b)
	}
	// A Log without a path discards, and Close then Reopen is harmless.
	d, err := OpenLog("", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	d.record("stdout", false, []byte("x"))
	if err := d.Reopen(); err != nil {
		t.Error(err)
	}
}
