package runtime

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/image"
)

func TestProcessArgs(t *testing.T) {
	img := image.RunConfig{Entrypoint: []string{"/entry"}, Cmd: []string{"default"}}
	for _, tc := range []struct {
		name      string
		cmd, args []string
		img       image.RunConfig
		want      []string
	}{
		{"image only", nil, nil, img, []string{"/entry", "default"}},
		{"args replace cmd", nil, []string{"a"}, img, []string{"/entry", "a"}},
		{"command replaces entrypoint and drops cmd", []string{"/bin/sh"}, nil, img, []string{"/bin/sh"}},
		{"command and args", []string{"/bin/sh"}, []string{"-c", "x"}, img, []string{"/bin/sh", "-c", "x"}},
		{"empty entrypoint string", nil, nil, image.RunConfig{Entrypoint: []string{""}, Cmd: []string{"sh"}}, []string{"sh"}},
		{"nothing", nil, nil, image.RunConfig{}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := processArgs(tc.cmd, tc.args, tc.img); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMergeEnv(t *testing.T) {
	got := mergeEnv([]string{"PATH=/bin", "A=1"}, []*runtimeapi.KeyValue{{Key: "A", Value: []byte("2")}, {Key: "B", Value: []byte("x=y")}})
	want := []string{"PATH=/bin", "A=2", "B=x=y"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCapabilities(t *testing.T) {
	r := &Runtime{host: hostInfo{capBound: map[string]bool{}}}
	for _, n := range capNames {
		if n != "CAP_SYS_RESOURCE" {
			r.host.capBound[n] = true
		}
	}
	for _, tc := range []struct {
		name             string
		sc               *runtimeapi.LinuxContainerSecurityContext
		has, lacks, clip []string
	}{
		{"default", nil, []string{"CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE"}, []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN"}, nil},
		{"add and drop", &runtimeapi.LinuxContainerSecurityContext{Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"net_admin", "CAP_SYS_RESOURCE"}, DropCapabilities: []string{"KILL"}}},
			[]string{"CAP_NET_ADMIN", "CAP_CHOWN"}, []string{"CAP_KILL", "CAP_SYS_RESOURCE"}, []string{"CAP_SYS_RESOURCE"}},
		{"drop all add one", &runtimeapi.LinuxContainerSecurityContext{Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"NET_RAW"}, DropCapabilities: []string{"ALL"}}},
			nil, []string{"CAP_NET_RAW", "CAP_CHOWN"}, nil},
		{"privileged", &runtimeapi.LinuxContainerSecurityContext{Privileged: true}, []string{"CAP_SYS_ADMIN", "CAP_BPF"}, []string{"CAP_SYS_RESOURCE"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps, clipped := r.capabilities(tc.sc)
			set := map[string]bool{}
			for _, c := range caps {
				set[c] = true
			}
			for _, c := range tc.has {
				if !set[c] {
					t.Errorf("lacks %s: %v", c, caps)
				}
			}
			for _, c := range tc.lacks {
				if set[c] {
					t.Errorf("has %s", c)
				}
			}
			if !reflect.DeepEqual(clipped, tc.clip) {
				t.Errorf("clipped %v, want %v", clipped, tc.clip)
			}
		})
	}
}

func TestResolveUser(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/:/bin/sh\napp:x:1000:1001::/:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\napp:x:1001:\nwheel:x:10:app,bob\nweb:x:33:\n"), 0o644)
	// A symlink out of the rootfs must resolve inside it.
	os.Symlink("/etc/shadow", filepath.Join(root, "etc/shadow-link"))
	i64 := func(v int64) *runtimeapi.Int64Value { return &runtimeapi.Int64Value{Value: v} }
	for _, tc := range []struct {
		name      string
		sc        *runtimeapi.LinuxContainerSecurityContext
		imageUser string
		want      processUser
		err       string
	}{
		{"default root", nil, "", processUser{0, 0, nil}, ""},
		{"image user name", nil, "app", processUser{1000, 1001, []uint32{10}}, ""},
		{"image user:group", nil, "app:web", processUser{1000, 33, []uint32{10}}, ""},
		{"image uid unknown", nil, "4242", processUser{4242, 0, nil}, ""},
		{"RunAsUser wins", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(1000)}, "root", processUser{1000, 1001, []uint32{10}}, ""},
		{"RunAsGroup and supplemental", &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(5), SupplementalGroups: []int64{7, 10}}, "", processUser{1000, 5, []uint32{10, 7}}, ""},
		{"strict policy skips /etc/group", &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "app", SupplementalGroupsPolicy: runtimeapi.SupplementalGroupsPolicy_Strict}, "", processUser{1000, 1001, nil}, ""},
		{"unknown name", &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "ghost"}, "", processUser{}, "ghost"},
		{"unknown group", nil, "app:ghosts", processUser{}, "ghosts"},
		{"RunAsGroup alone", &runtimeapi.LinuxContainerSecurityContext{RunAsGroup: i64(5)}, "", processUser{}, "runAsGroup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveUser(root, tc.sc, tc.imageUser)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
	if f, err := openInRoot(root, "/etc/shadow-link"); err == nil {
		f.Close()
		t.Error("a symlink out of the rootfs was followed to the host")
	}
}

func TestCRILog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.log")
	l, err := openCRILog(path, 200, 3)
	if err != nil {
		t.Fatal(err)
	}
	r, w, _ := os.Pipe()
	done := make(chan struct{})
	var teed strings.Builder
	go func() { copyLines(r, l, "stdout", func(p []byte) { teed.Write(p) }); close(done) }()
	w.Write([]byte("one\ntw"))
	w.Write([]byte("o\r\n" + strings.Repeat("x", maxLogLine+5) + "\nlast"))
	w.Close()
	<-done
	l.Close()
	var recs []string
	files, _ := filepath.Glob(path + "*")
	for i := len(files) - 1; i >= 0; i-- { // oldest (highest suffix) first
		b, _ := os.ReadFile(files[i])
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			parts := strings.SplitN(line, " ", 4)
			if len(parts) != 4 {
				t.Fatalf("bad record %q", line)
			}
			if _, err := time.Parse(time.RFC3339Nano, parts[0]); err != nil {
				t.Errorf("timestamp %q: %v", parts[0], err)
			}
			recs = append(recs, parts[1]+" "+parts[2]+" "+strings.TrimLeft(parts[3], "x")+"|"+itoa(len(parts[3])))
		}
	}
	want := []string{"stdout F one|3", "stdout F two|3", "stdout P |16384", "stdout F |5", "stdout F last|4"}
	// Rotation at 200 bytes keeps 3 files: the oldest record fell off.
	if len(files) != 3 || !reflect.DeepEqual(recs, want[len(want)-len(recs):]) || len(recs) < 3 {
		t.Errorf("files %v\nrecords %q\nwant the tail of %q", files, recs, want)
	}
	if !strings.HasPrefix(teed.String(), "one\ntwo\r\n") {
		t.Errorf("tee got %q", teed.String()[:20])
	}
}

func TestResolvConf(t *testing.T) {
	got := string(resolvConf(&runtimeapi.DNSConfig{Servers: []string{"10.0.0.10"}, Searches: []string{"default.svc.cluster.local", "svc.cluster.local"}, Options: []string{"ndots:5"}}))
	want := "search default.svc.cluster.local svc.cluster.local\nnameserver 10.0.0.10\noptions ndots:5\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	host, _ := os.ReadFile("/etc/resolv.conf")
	if got := resolvConf(nil); string(got) != string(host) {
		t.Errorf("no DNS config: got %q, want the host's", got)
	}
}

func TestRuncMessage(t *testing.T) {
	in := `time="2026-11-28T01:00:00Z" level=error msg="runc create failed: unable to start container process: exec: \"nope\": executable file not found in $PATH"` + "\n"
	if got := runcMessage(in); got != `runc create failed: unable to start container process: exec: "nope": executable file not found in $PATH` {
		t.Errorf("got %q", got)
	}
}

func TestSeccompProfiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","write"],"action":"SCMP_ACT_ALLOW"}]}`), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"syscalls":[]}`), 0o644)
	for _, tc := range []struct {
		name  string
		sc    *runtimeapi.LinuxContainerSecurityContext
		deflt string
		err   string
	}{
		{"none", &runtimeapi.LinuxContainerSecurityContext{}, "", ""},
		{"runtime default", &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}, "SCMP_ACT_ALLOW", ""},
		{"unconfined", &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}}, "", ""},
		{"localhost", &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: good}}, "SCMP_ACT_ERRNO", ""},
		{"localhost without defaultAction", &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: bad}}, "", "defaultAction"},
		{"localhost missing", &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: filepath.Join(dir, "nope")}}, "", "no such file"},
		{"privileged ignores it", &runtimeapi.LinuxContainerSecurityContext{Privileged: true, Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}, "", ""},
		{"legacy path", &runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "runtime/default"}, "SCMP_ACT_ALLOW", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := seccompFor(tc.sc)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if s != nil {
				got = string(s.DefaultAction)
			}
			if got != tc.deflt {
				t.Errorf("default action %q, want %q", got, tc.deflt)
			}
		})
	}
}

func TestSendChunks(t *testing.T) {
	for _, tc := range []struct{ n, msgs, last int }{{0, 1, 0}, {1, 1, 1}, {500, 1, 500}, {1201, 3, 201}} {
		var sizes []int
		sendChunks(make([]int, tc.n), func(c []int) error { sizes = append(sizes, len(c)); return nil })
		if len(sizes) != tc.msgs || sizes[len(sizes)-1] != tc.last {
			t.Errorf("%d items: messages %v", tc.n, sizes)
		}
	}
}
