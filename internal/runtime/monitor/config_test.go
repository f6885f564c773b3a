package monitor

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFrames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		kind    byte
		payload string
		err     string
	}{
		{name: "stdout", in: []byte{FrameStdout, 0, 0, 0, 2, 'h', 'i'}, kind: FrameStdout, payload: "hi"},
		{name: "empty stdin close", in: []byte{FrameStdinClose, 0, 0, 0, 0}, kind: FrameStdinClose},
		{name: "short header", in: []byte{FrameStdout, 0}, err: "EOF"},
		{name: "short payload", in: []byte{FrameStdout, 0, 0, 0, 5, 'h'}, err: "frame payload"},
		{name: "huge length", in: []byte{FrameStdout, 0xff, 0xff, 0xff, 0xff}, err: "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, p, err := ReadFrame(bytes.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || kind != tc.kind || string(p) != tc.payload {
				t.Fatalf("got %d %q %v, want %d %q", kind, p, err, tc.kind, tc.payload)
			}
			var buf bytes.Buffer
			if err := WriteFrame(&buf, kind, p); err != nil || !bytes.Equal(buf.Bytes(), tc.in) {
				t.Errorf("WriteFrame wrote %v %v, want %v", buf.Bytes(), err, tc.in)
			}
		})
	}
	if err := WriteFrame(&bytes.Buffer{}, FrameStdout, make([]byte, maxFrame+1)); err == nil {
		t.Error("WriteFrame accepted a frame its reader refuses")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "exit.json")
	if err := WriteJSON(path, ExitStatus{ExitCode: 3, Signal: "SIGTERM"}); err != nil {
		t.Fatal(err)
	}
	var got ExitStatus
	if err := ReadJSON(path, &got); err != nil || got.ExitCode != 3 || got.Signal != "SIGTERM" {
		t.Fatalf("read back %+v %v", got, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	// A failed write (the target is a directory) leaves no temporary file.
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	if err := WriteFileAtomic(filepath.Join(dir, "d"), []byte("x"), 0o644); err == nil {
		t.Error("renaming over a directory succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestRuncMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`time="2026-11-28T01:00:00Z" level=error msg="exec: \"nope\": not found"` + "\n", `exec: "nope": not found`},
		{"  plain failure\n", "plain failure"},
		{`msg="unterminated`, `msg="unterminated`},
	} {
		if got := RuncMessage(tc.in); got != tc.want {
			t.Errorf("RuncMessage(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
