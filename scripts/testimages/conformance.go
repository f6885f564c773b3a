package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The conformance image set: what upstream's e2e.test (Kubernetes
// v1.36.3, k8s.io/kubernetes/test/utils/image/manifest.go) asks for most,
// under the names and tags it asks for, so a node that has them imported
// never pulls (the e2e pods' pull policy is IfNotPresent for a tagged
// image). The names must follow manifest.go when the Kubernetes version
// moves; conformanceSet is the one place that lists them.
const (
	agnhostTag     = "2.63.0" // configs[Agnhost]
	agnhostPrevTag = "2.55"   // configs[AgnhostPrev]
	// kubernetesVersion is the k8s.io/kubernetes module agnhost comes from.
	kubernetesVersion = "v1.36.3"
)

// conformanceSet is the conformance images. agnhost is the path of a
// static agnhost binary (built from k8s.io/kubernetes/test/images/agnhost
// with CGO_ENABLED=0); "" leaves the agnhost images out.
func conformanceSet(agnhost string) ([]spec, error) {
	web := func(name string, names ...string) spec {
		return spec{names: names, self: []entry{selfAt("usr/sbin/"+name, 0o755)}, entrypoint: []string{"/usr/sbin/" + name}}
	}
	s := []spec{
		// configs[BusyBox]; the older tags for tests and manifests that
		// still name them.
		{names: []string{e2e + "busybox:1.37.0-1", e2e + "busybox:1.36.1-1", e2e + "busybox:1.29-2", "docker.io/library/busybox:latest"}, cmd: []string{"sh"}},
		// configs[Pause]: what e2e pods that only have to exist run.
		{names: []string{"registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.9"}, self: []entry{selfAt("pause", 0o755)}, entrypoint: []string{"/pause"}},
		// configs[Nginx], configs[NginxNew]; httpd for older manifests.
		web("nginx", e2e+"nginx:1.15-4", e2e+"nginx:1.27-0", e2e+"nginx:1.14-2"),
		web("httpd", e2e+"httpd:2.4.38-4", e2e+"httpd:2.4.39-4"),
		// configs[Nonewprivs], configs[NonRoot] (upstream's nonroot runs as uid 1234).
		{names: []string{e2e + "nonewprivs:1.4", e2e + "nonewprivs:1.3"}, self: []entry{selfAt("usr/local/bin/nnp", 0o4755)}, entrypoint: []string{"/usr/local/bin/nnp"}, user: "0"},
		{names: []string{e2e + "nonroot:1.5", e2e + "nonroot:1.4"}, user: "1234", cmd: []string{"sh"}},
	}
	// configs[GlibcDnsTesting]: the DNS tests' querier, dig and getent
	// under a shell that honours PATH.
	dash, err := dashShell()
	if err != nil {
		return nil, err
	}
	s = append(s, spec{names: []string{e2e + "glibc-dns-testing:2.0.0"}, files: dash, self: dnsTools(), cmd: []string{"sh"}})
	if agnhost != "" {
		bin, err := os.ReadFile(agnhost)
		if err != nil {
			return nil, fmt.Errorf("agnhost binary: %w", err)
		}
		// As upstream's agnhost Dockerfile: /agnhost, ENTRYPOINT
		// ["/agnhost"], CMD ["pause"], over a busybox userland (sh,
		// nslookup, wget) and this program as nc that the tests' shell commands use.
		files := []entry{{name: "agnhost", body: string(bin), mode: 0o755}}
		certs, err := agnhostCerts()
		if err != nil {
			return nil, err
		}
		files = append(files, certs...)
		dash, err := dashShell()
		if err != nil {
			return nil, err
		}
		files = append(files, dash...)
		s = append(s, spec{
			names: []string{e2e + "agnhost:" + agnhostTag, e2e + "agnhost:" + agnhostPrevTag},
			files: files,
			// OpenBSD-style nc ahead of busybox's on PATH (netcat.go); /bin/sh is dash, which
			// honours PATH (dashShell).
			self:       dnsTools(),
			entrypoint: []string{"/agnhost"},
			cmd:        []string{"pause"},
		})
	}
	return s, nil
}

// dashShell is the host's /bin/dash as the image's /bin/sh, with the two
// libraries it links. Debian's static busybox is built with
// SH_STANDALONE: its sh runs its own applet for any command that names
// one, whatever PATH says, so `sh -c 'nc -v ...'` would never reach the
// nc in /usr/local/bin. dash looks commands up in PATH.
func dashShell() ([]entry, error) {
	es := dirs("lib", "lib/x86_64-linux-gnu", "lib64")
	for _, f := range [][2]string{
		{"bin/sh", "/bin/dash"},
		{"lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"},
		{"lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2"},
	} {
		b, err := os.ReadFile(f[1])
		if err != nil {
			return nil, fmt.Errorf("the agnhost image's shell is the host's dash (apt-get install dash): %w", err)
		}
		es = append(es, entry{name: f[0], body: string(b), mode: 0o755})
	}
	return es, nil
}

// dnsTools are this program as nc, dig and getent in /usr/local/bin
// (netcat.go, dig.go): upstream's images have OpenBSD netcat and bind's
// dig, which busybox lacks or has with other options.
func dnsTools() []entry {
	return []entry{selfAt("usr/local/bin/nc", 0o755), selfAt("usr/local/bin/dig", 0o755), selfAt("usr/local/bin/getent", 0o755)}
}

// agnhostCerts are the porter's TLS certificate and key, which upstream's
// agnhost image carries at its root (/localhost.crt, /localhost.key):
// porter serves its SERVE_TLS_PORT_* ports with them. They come from the
// k8s.io/kubernetes module agnhost was built from.
func agnhostCerts() ([]entry, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "k8s.io", "kubernetes@"+kubernetesVersion, "test", "images", "agnhost", "porter")
	var es []entry
	for _, f := range []string{"localhost.crt", "localhost.key"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("agnhost's %s (from the k8s.io/kubernetes module agnhost is built from): %w", f, err)
		}
		es = append(es, entry{name: f, body: string(b), mode: 0o644})
	}
	return es, nil
}
