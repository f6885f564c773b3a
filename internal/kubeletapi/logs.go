package kubeletapi

import (
	"io"
	"net/url"
	"strconv"
	"time"
)

// LogLine is one record of a container's log.
type LogLine struct {
	At   time.Time
	Text string // without its newline
	// Partial records are followed by no newline: the runtime split a
	// long line, the next record continues it (a CRI "P" tag).
	Partial bool
}

// LogOptions is the query of a /containerLogs request.
type LogOptions struct {
	Follow     bool
	Timestamps bool
	Previous   bool
	TailLines  int // -1: all
	LimitBytes int // 0: no limit
	Since      time.Time
}

// ParseLogOptions reads the query; values that do not parse are ignored,
// as the API server has validated what it forwards.
func ParseLogOptions(q url.Values, now time.Time) LogOptions {
	o := LogOptions{Follow: q.Get("follow") == "true", Timestamps: q.Get("timestamps") == "true",
		Previous: q.Get("previous") == "true", TailLines: -1}
	if t, err := strconv.Atoi(q.Get("tailLines")); err == nil && t >= 0 {
		o.TailLines = t
	}
	if b, err := strconv.Atoi(q.Get("limitBytes")); err == nil && b > 0 {
		o.LimitBytes = b
	}
	if s, err := strconv.Atoi(q.Get("sinceSeconds")); err == nil && s > 0 {
		o.Since = now.Add(-time.Duration(s) * time.Second)
	} else if t, err := time.Parse(time.RFC3339, q.Get("sinceTime")); err == nil {
		o.Since = t
	}
	return o
}

// Select applies the time filter, then tailLines. It does not modify
// lines.
func (o LogOptions) Select(lines []LogLine) []LogLine {
	if !o.Since.IsZero() {
		kept := lines[:0:0]
		for _, l := range lines {
			if !l.At.Before(o.Since) {
				kept = append(kept, l)
			}
		}
		lines = kept
	}
	if o.TailLines >= 0 && o.TailLines < len(lines) {
		lines = lines[len(lines)-o.TailLines:]
	}
	return lines
}

// Timestamp formats: simulated nodes print RFC 3339 with trimmed
// nanoseconds; real kubelets print fixed nine digits, as upstream does.
const (
	TimeFormatTrimmed = time.RFC3339Nano
	TimeFormatFixed   = "2006-01-02T15:04:05.000000000Z07:00"
)

// LogWriter formats lines and stops at the byte limit.
type LogWriter struct {
	W          io.Writer
	Opts       LogOptions
	TimeFormat string // TimeFormatTrimmed when empty
	written    int
}

// Write writes l (cut at the byte limit) and reports whether more may
// follow.
func (lw *LogWriter) Write(l LogLine) bool {
	var b []byte
	if lw.Opts.Timestamps {
		f := lw.TimeFormat
		if f == "" {
			f = TimeFormatTrimmed
		}
		b = l.At.UTC().AppendFormat(b, f)
		b = append(b, ' ')
	}
	b = append(b, l.Text...)
	if !l.Partial {
		b = append(b, '\n')
	}
	if lw.Opts.LimitBytes > 0 {
		if left := lw.Opts.LimitBytes - lw.written; len(b) >= left {
			_, _ = lw.W.Write(b[:left])
			lw.written += left
			return false
		}
	}
	n, err := lw.W.Write(b)
	lw.written += n
	return err == nil
}
