package kubelet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// Container logs as the runtime writes them, one record a line in the
// CRI log format:
//
//	2026-01-02T15:04:05.123456789Z stdout F the line
//	2026-01-02T15:04:05.123456789Z stderr P a long line's first part
//
// (timestamp, stream, tags — P partial or F full, more after ':' — and
// the content). The kubelet reads them back for /containerLogs and for
// FallbackToLogsOnError termination messages.

// parseCRILogLine reads one record (without its newline).
func parseCRILogLine(b []byte) (kubeletapi.LogLine, error) {
	ts, rest, ok := bytes.Cut(b, []byte{' '})
	if !ok {
		return kubeletapi.LogLine{}, fmt.Errorf("log line %q: no timestamp", b)
	}
	at, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return kubeletapi.LogLine{}, fmt.Errorf("log line %q: %w", b, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok || (string(stream) != "stdout" && string(stream) != "stderr") {
		return kubeletapi.LogLine{}, fmt.Errorf("log line %q: no stream", b)
	}
	tags, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		// A record with an empty content may end at its tag.
		tags, content = rest, nil
	}
	first, _, _ := bytes.Cut(tags, []byte{':'})
	switch string(first) {
	case "P":
		return kubeletapi.LogLine{At: at, Text: string(content), Partial: true}, nil
	case "F":
		return kubeletapi.LogLine{At: at, Text: string(content)}, nil
	}
	// No tag (an old runtime): the rest is the content.
	return kubeletapi.LogLine{At: at, Text: string(rest)}, nil
}

// readCRILog reads a whole log file; records that do not parse are
// skipped, as the kubelet does.
func readCRILog(path string) ([]kubeletapi.LogLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lr := &logReader{r: bufio.NewReaderSize(f, 64<<10)}
	var out []kubeletapi.LogLine
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, l)
	}
}

// logReader yields complete records from a log file that may still grow:
// at the end it returns io.EOF and keeps a partly written record for the
// next call.
type logReader struct {
	r       *bufio.Reader
	pending []byte
}

func (lr *logReader) next() (kubeletapi.LogLine, error) {
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.pending = append(lr.pending, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return kubeletapi.LogLine{}, err // io.EOF: pending waits for more
		}
		line := bytes.TrimSuffix(lr.pending, []byte{'\n'})
		lr.pending = lr.pending[:0]
		l, perr := parseCRILogLine(line)
		if perr != nil {
			continue
		}
		return l, nil
	}
}
