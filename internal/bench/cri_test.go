package bench

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestSocketOwnerAndMemory(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pid, err := socketOwner(sock)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("socketOwner = %d, %v; want this process %d", pid, err, os.Getpid())
	}
	if _, err := socketOwner(sock + ".missing"); err == nil {
		t.Error("socketOwner of a path nobody listens on succeeded")
	}

	// A "monitor": a child whose command line holds a marker.
	marker := "rudder-bench-marker-" + randomHex(4)
	// "; true" keeps the shell (and its marked command line) alive.
	child := exec.Command("/bin/sh", "-c", "sleep 30; true", marker)
	if err := child.Start(); err != nil {
		t.Skip("no /bin/sh:", err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	m, err := criMemoryOf(sock, marker)
	if err != nil {
		t.Fatal(err)
	}
	if m.RuntimeRSSMiB <= 0 || m.TotalPSSMiB <= 0 {
		t.Errorf("memory of this process = %+v, want RSS and PSS above 0", m)
	}
	if m.Monitors != 1 || m.MonitorsRSSMiB <= 0 || m.TotalRSSMiB < m.RuntimeRSSMiB+m.MonitorsRSSMiB-0.2 {
		t.Errorf("criMemoryOf = %+v, want the one marked child counted", m)
	}
}
