package simnode

import (
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// The kubelet's order: time filter, then tailLines, then limitBytes.
func TestLogOptions(t *testing.T) {
	now := time.Unix(1000, 0)
	lines := []logLine{
		{now.Add(-time.Hour), "one"},
		{now.Add(-time.Minute), "two"},
		{now.Add(-time.Second), "three"},
	}
	for _, tc := range []struct {
		name, query, want string
		more              bool
	}{
		{"everything", "", "one\ntwo\nthree\n", true},
		{"tailLines", "tailLines=2", "two\nthree\n", true},
		{"tailLines=0", "tailLines=0", "", true},
		{"sinceSeconds", "sinceSeconds=120", "two\nthree\n", true},
		{"sinceTime", "sinceTime=" + url.QueryEscape(now.Add(-30*time.Second).Format(time.RFC3339)), "three\n", true},
		{"since then tail", "sinceSeconds=120&tailLines=1", "three\n", true},
		{"limitBytes cuts a line", "limitBytes=6", "one\ntw", false},
		{"limitBytes at a line's end", "limitBytes=8", "one\ntwo\n", false},
		{"timestamps", "tailLines=1&timestamps=true", "1970-01-01T00:16:39Z three\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			opts := parseLogOptions(q, now)
			w := httptest.NewRecorder()
			lw := &logWriter{w: w, opts: opts}
			more := true
			for _, l := range opts.selectLines(lines) {
				if more = lw.write(l); !more {
					break
				}
			}
			if got := w.Body.String(); got != tc.want || more != tc.more {
				t.Errorf("got %q (more %v), want %q (more %v)", got, more, tc.want, tc.more)
			}
		})
	}
}
