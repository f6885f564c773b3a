package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// These are behaviours critest checks (scripts/critest.sh), kept here so
// they hold without it.

func TestSandboxHostnameDefaultsToNode(t *testing.T) {
	e := newEnv(t)
	node, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// A pod name longer than the kernel's 64-byte hostname limit: with no
	// Hostname, the sandbox must take the node's, not the pod's name.
	cfg := podConfig("pod-with-a-name-much-longer-than-the-sixty-four-bytes-a-hostname-may-have")
	cfg.Hostname = ""
	resp, err := e.rs.RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(e.run, "sandboxes", resp.PodSandboxId, "hostname"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != node {
		t.Errorf("hostname = %q, want the node's %q", got, node)
	}
}

func TestFailedSandboxLeavesNothing(t *testing.T) {
	e := newEnv(t)
	cfg := podConfig("too-long")
	cfg.Hostname = strings.Repeat("h", 80)
	if _, err := e.rs.RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg}); err == nil {
		t.Fatal("RunPodSandbox with an 80-byte hostname succeeded")
	}
	for _, dir := range []string{filepath.Join(e.run, "sandboxes"), filepath.Join(e.root, "sandboxes")} {
		ents, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if len(ents) != 0 {
			t.Errorf("%s holds %d entries after a failed RunPodSandbox", dir, len(ents))
		}
	}
}

func TestStopUnknownContainerSucceeds(t *testing.T) {
	e := newEnv(t)
	if _, err := e.rs.StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: "0123456789abcdef", Timeout: 1}); err != nil {
		t.Errorf("StopContainer of an unknown container: %v", err)
	}
}

func TestRunAsGroupWithoutUserRefused(t *testing.T) {
	sc := &runtimeapi.LinuxContainerSecurityContext{RunAsGroup: &runtimeapi.Int64Value{Value: 1000}}
	if _, err := resolveUser(t.TempDir(), sc, "1000"); !errors.Is(err, errInvalid) {
		t.Errorf("resolveUser with runAsGroup alone = %v, want errInvalid", err)
	}
	sc.RunAsUser = &runtimeapi.Int64Value{Value: 1000}
	pu, err := resolveUser(t.TempDir(), sc, "")
	if err != nil || pu.uid != 1000 || pu.gid != 1000 {
		t.Errorf("resolveUser with runAsUser and runAsGroup = %+v, %v; want uid and gid 1000", pu, err)
	}
}
