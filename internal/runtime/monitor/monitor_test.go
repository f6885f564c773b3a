package monitor

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeRunc stands in for `runc create`: it starts the "container" (a
// shell) in the background with runc's stdio and writes its pid, as
// runc does; the container then becomes the monitor's child when this
// script exits, the monitor being a subreaper. With FAIL in the
// environment it fails as runc does, with a JSON log record.
const fakeRunc = `#!/bin/sh
while [ $# -gt 0 ]; do
	case "$1" in
	--pid-file) pid="$2"; shift ;;
	--log) log="$2"; shift ;;
	esac
	shift
done
if [ -n "$FAIL" ]; then
	echo '{"level":"error","msg":"exec: \"nope\": executable file not found"}' > "$log"
	exit 1
fi
exec 3<&0
sh -c 'read line; echo "out:$line"; echo err >&2; exit 7' <&3 &
echo $! > "$pid"
`

// startMonitor runs this test binary as a monitor, as the runtime runs
// rudder: the package's init takes over when os.Args[1] is Subcommand.
func startMonitor(t *testing.T, cfg Config, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "shim.json")
	if err := WriteJSON(cfgPath, cfg); err != nil {
		t.Fatal(err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer readyR.Close()
	cmd := exec.Command(os.Args[0], Subcommand, cfgPath)
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readyW.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	readyR.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := bufio.NewReader(readyR).ReadString('\n')
	if err != nil {
		t.Fatalf("ready pipe: %v (monitor stderr: %s)", err, stderr.String())
	}
	return cmd, strings.TrimSpace(line)
}

func testConfig(t *testing.T) Config {
	dir := t.TempDir()
	runc := filepath.Join(dir, "runc")
	if err := os.WriteFile(runc, []byte(fakeRunc), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh:", err)
	}
	return Config{
		ID: "c1", Bundle: dir, Runc: runc, RuncRoot: dir,
		PidFile: filepath.Join(dir, "init.pid"), Socket: filepath.Join(dir, "a.sock"),
		ExitFile: filepath.Join(dir, "exit.json"), LogPath: filepath.Join(dir, "logs", "c.log"),
		LogMaxSize: 1 << 20, LogMaxFiles: 2, Stdin: true, StdinOnce: true,
	}
}

func request(t *testing.T, socket string, req Request) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

// TestMonitorLifecycle runs a whole container life against a fake runc:
// ready line, attach with stdin, output to the client and the CRI log,
// the exit status in a frame, to waiters and in the exit file.
func TestMonitorLifecycle(t *testing.T) {
	cfg := testConfig(t)
	cmd, ready := startMonitor(t, cfg)
	if !strings.HasPrefix(ready, "ok ") {
		t.Fatalf("ready line %q", ready)
	}
	_, waitR := request(t, cfg.Socket, Request{Op: OpWait})
	conn, br := request(t, cfg.Socket, Request{Op: OpAttach, Stdin: true, Stdout: true, Stderr: true})
	if line, err := br.ReadString('\n'); err != nil || line != "ok\n" {
		t.Fatalf("attach answered %q %v", line, err)
	}
	// The container reads its stdin before writing: its output comes
	// after this client is subscribed.
	if err := WriteFrame(conn, FrameStdin, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	WriteFrame(conn, FrameStdinClose, nil)
	var stdout, stderr string
	var exit ExitStatus
	for done := false; !done; {
		kind, p, err := ReadFrame(br)
		if err != nil {
			t.Fatalf("attach stream ended without an exit frame: %v (stdout %q stderr %q)", err, stdout, stderr)
		}
		switch kind {
		case FrameStdout:
			stdout += string(p)
		case FrameStderr:
			stderr += string(p)
		case FrameExit:
			if err := json.Unmarshal(p, &exit); err != nil {
				t.Fatal(err)
			}
			done = true
		}
	}
	if stdout != "out:hello\n" || stderr != "err\n" || exit.ExitCode != 7 || exit.FinishedAt == 0 {
		t.Errorf("attach got stdout %q stderr %q exit %+v", stdout, stderr, exit)
	}
	line, err := waitR.ReadString('\n')
	var waited ExitStatus
	if err != nil || json.Unmarshal([]byte(line), &waited) != nil || waited != exit {
		t.Errorf("wait answered %q %v, want %+v", line, err, exit)
	}
	var file ExitStatus
	if err := ReadJSON(cfg.ExitFile, &file); err != nil || file != exit {
		t.Errorf("exit file %+v %v, want %+v", file, err, exit)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("monitor exited with %v", err)
	}
	recs := readRecords(t, cfg.LogPath)
	if len(recs) != 2 || !(recs[0] == "stdout F out:hello" && recs[1] == "stderr F err" || recs[1] == "stdout F out:hello" && recs[0] == "stderr F err") {
		t.Errorf("log records %q", recs)
	}
	if _, err := os.Stat(cfg.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

func TestMonitorFailures(t *testing.T) {
	t.Run("runc create fails", func(t *testing.T) {
		cfg := testConfig(t)
		cmd, ready := startMonitor(t, cfg, "FAIL=1")
		if ready != `error: runc create: exit status 1: exec: "nope": executable file not found` {
			t.Errorf("ready line %q", ready)
		}
		var ee *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("monitor exited with %v, want code 1", err)
		}
		if _, err := os.Stat(cfg.ExitFile); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a container that never ran has an exit file: %v", err)
		}
	})
	for _, tc := range []struct {
		name, config string // config "" = no argument
		want         string
	}{
		{"no config argument", "", "usage"},
		{"missing config file", "/nonexistent/shim.json", "no such file"},
		{"bad JSON", "{", "config"},
		{"incomplete config", `{"ID":"x"}`, "are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{Subcommand}
			if tc.config != "" {
				path := tc.config
				if !strings.HasPrefix(path, "/") {
					path = filepath.Join(t.TempDir(), "shim.json")
					os.WriteFile(path, []byte(tc.config), 0o600)
				}
				args = append(args, path)
			}
			out, err := exec.Command(os.Args[0], args...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("got %v, output %q; want exit 2 with %q", err, out, tc.want)
			}
		})
	}
}
