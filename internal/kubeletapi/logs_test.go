package kubeletapi

import (
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// The kubelet's order: time filter, then tailLines, then limitBytes.
func TestLogOptions(t *testing.T) {
	now := time.Unix(1000, 0)
	lines := []LogLine{
		{At: now.Add(-time.Hour), Text: "one"},
		{At: now.Add(-time.Minute), Text: "two"},
		{At: now.Add(-time.Second), Text: "three"},
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
		{"fixed timestamps", "tailLines=1&timestamps=true&fixed", "1970-01-01T00:16:39.000000000Z three\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			opts := ParseLogOptions(q, now)
			w := httptest.NewRecorder()
			lw := &LogWriter{W: w, Opts: opts}
			if q.Has("fixed") {
				lw.TimeFormat = TimeFormatFixed
			}
			more := true
			for _, l := range opts.Select(lines) {
				if more = lw.Write(l); !more {
					break
				}
			}
			if got := w.Body.String(); got != tc.want || more != tc.more {
				t.Errorf("got %q (more %v), want %q (more %v)", got, more, tc.want, tc.more)
			}
		})
	}
}

// A partial record is followed by the next one on the same line.
func TestLogWriterPartial(t *testing.T) {
	w := httptest.NewRecorder()
	lw := &LogWriter{W: w, Opts: LogOptions{TailLines: -1}}
	lw.Write(LogLine{Text: "a long ", Partial: true})
	lw.Write(LogLine{Text: "line"})
	if got := w.Body.String(); got != "a long line\n" {
		t.Errorf("got %q", got)
	}
	if o := ParseLogOptions(url.Values{"previous": {"true"}}, time.Time{}); !o.Previous {
		t.Error("previous=true not read")
	}
}
