package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rudder-dev/rudder/internal/netns"
)

// TestChild supervises a stand-in for the agent (/bin/sh): it starts in
// the node's namespace and cgroup, is restarted after each exit, and at
// the end is stopped with SIGTERM, or SIGKILL when it ignores that.
func TestChild(t *testing.T) {
	requireRoot(t)
	cg, err := detectCgroups()
	if err != nil {
		t.Skip(err)
	}
	own, err := cg.ownCgroup()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(own, "rudder-childtest"+strconv.Itoa(os.Getpid()))
	leaf := filepath.Join(root, "node-1", "agent")
	if err := cg.create(leaf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cg.killAll(root, 5*time.Second); cg.remove(root, 5*time.Second) })
	ns, err := netns.New()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	nsInode, _ := ns.Inode()

	newChild := func(script string) *child {
		return &child{
			name: "node-1", ns: ns, exe: "/bin/sh", args: []string{"-c", script},
			logPath: filepath.Join(t.TempDir(), "agent.log"), cg: cg, cgroup: leaf,
			backoff: backoff{min: 20 * time.Millisecond, max: 80 * time.Millisecond, stable: time.Minute},
			grace:   300 * time.Millisecond,
			started: make(chan struct{}), done: make(chan struct{}),
		}
	}

	t.Run("an exiting agent is restarted", func(t *testing.T) {
		c := newChild("exit 3")
		ctx, cancel := context.WithCancel(context.Background())
		go c.run(ctx)
		deadline := time.Now().Add(5 * time.Second)
		for c.Starts() < 4 {
			if time.Now().After(deadline) {
				t.Fatalf("%d starts in 5 s", c.Starts())
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-c.done
	})

	for _, tc := range []struct {
		name, script string
		minStop      time.Duration
	}{
		{"SIGTERM stops it", "sleep 100 & wait", 0},
		{"one that ignores SIGTERM is killed after the grace", "trap '' TERM; echo trapped; while :; do sleep 0.05; done", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChild(tc.script)
			ctx, cancel := context.WithCancel(context.Background())
			go c.run(ctx)
			<-c.started
			if c.startErr != nil {
				t.Fatal(c.startErr)
			}
			if strings.Contains(tc.script, "echo trapped") {
				// SIGTERM before the shell set its trap would end it at once.
				deadline := time.Now().Add(5 * time.Second)
				for b, _ := os.ReadFile(c.logPath); !strings.Contains(string(b), "trapped"); b, _ = os.ReadFile(c.logPath) {
					if time.Now().After(deadline) {
						t.Fatal("the stand-in never set its trap")
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			pid := c.PID()
			if got, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); got != fmt.Sprintf("net:[%d]", nsInode) {
				t.Errorf("the agent runs in %s, want the node's net:[%d]", got, nsInode)
			}
			procCg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			if !inCgroup(string(procCg), leaf) {
				t.Errorf("the agent is in\n%s\nwant %s", procCg, leaf)
			}
			stopping := time.Now()
			cancel()
			select {
			case <-c.done:
			case <-time.After(5 * time.Second):
				t.Fatal("not stopped within 5 s")
			}
			if d := time.Since(stopping); d < tc.minStop {
				t.Errorf("stopped in %v, before the grace", d)
			}
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z") {
				t.Errorf("pid %d still runs: %s", pid, stat)
			}
		})
	}
}
