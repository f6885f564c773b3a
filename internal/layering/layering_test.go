package layering

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/rudder-dev/rudder"

type kind int

const (
	leaf kind = iota
	component
	wiring
	testSupport
)

func (k kind) String() string {
	return [...]string{"leaf", "component", "wiring", "test support"}[k]
}

// mayImport is every allowed edge between kinds; a component may also
// import the packages of its own component. Nothing else is allowed.
var mayImport = map[kind][]kind{
	leaf:        {leaf},
	component:   {leaf},
	wiring:      {leaf, component, wiring},
	testSupport: {leaf, component, wiring, testSupport},
}

// layers is the one table: every package of the module, by path relative
// to the module; the longest matching path wins. A path matches itself
// and the packages below it; a path ending in "/*" makes each directory
// below it its own component (every controller is one). Components
// sharing a name are one component in several packages.
var layers = []struct {
	path string
	kind kind
	name string // the component, for kind component
}{
	// Components: the parts that run and talk only through the API server.
	{"internal/apiserver", component, "apiserver"}, // + registry, openapi, customresource
	{"internal/storage", component, "apiserver"},   // only the API server reaches etcd
	{"internal/admission", component, "admission"},
	{"internal/scheduler", component, "scheduler"}, // + framework, plugins
	{"internal/controllers/*", component, ""},      // one component per controller
	{"internal/kubelet", component, "kubelet"},
	{"internal/runtime", component, "runtime"}, // + image, streaming, …
	{"internal/network", component, "network"},
	{"internal/proxy", component, "proxy"},
	{"internal/dns", component, "dns"},
	{"internal/netpolicy", component, "netpolicy"},
	{"internal/simnode", component, "simnode"},

	// Leaves: shared pure logic and libraries, named for their concept.
	{"internal/admit", leaf, ""},               // the API server ↔ admission contract
	{"internal/auth", leaf, ""},                // authn/authz decisions, used by apiserver, admission, certificates
	{"internal/cel", leaf, ""},                 // CEL environment and type checking of policies
	{"internal/controller", leaf, ""},          // the reconciler runner every controller uses
	{"internal/controllers/history", leaf, ""}, // ControllerRevision helpers (daemonset, statefulset)
	{"internal/cronschedule", leaf, ""},        // CronJob schedules (validation and controller)
	{"internal/netns", leaf, ""},               // network namespaces held by this process: create, enter, listen, dial (localcluster, tests)
	{"internal/kubeletapi", leaf, ""},          // kubelet API authn/authz, log queries, resource metrics (kubelet, simnode)
	{"internal/nodeidentity", leaf, ""},        // TLS bootstrap of a joining node (agent)
	{"internal/layering", leaf, ""},            // this test
	{"internal/leaderelect", leaf, ""},         // leases for leader election
	{"internal/pki", leaf, ""},                 // cluster certificates
	{"internal/quota", leaf, ""},               // what a ResourceQuota charges (admission, controller)
	{"internal/serviceendpoints", leaf, ""},    // pod membership of a Service (endpoints, endpointslice)

	// Wiring: starts components in one process.
	{"cmd", wiring, ""},
	{"internal/server", wiring, ""},      // storage + apiserver + scheduler + controllers
	{"internal/agent", wiring, ""},       // kubelet + runtime + network + proxy
	{"internal/controllers", wiring, ""}, // the controllers registry (registry.go)
	{"internal/bench", wiring, ""},       // `rudder bench` scenarios stand clusters up
	{"scripts", wiring, ""},              // tools the scripts build (test images for critest)

	// `rudder up --nodes`: node agents in namespaces of their own.
	{"internal/localcluster", wiring, ""},

	// Test support: stands clusters up; only tests import it.
	{"internal/clustertest", testSupport, ""},
	{"internal/controller/controllertest", testSupport, ""},
	{"internal/kubectltest", testSupport, ""},
}

// class is where a package sits: its kind and, for a component, which.
type class struct {
	kind kind
	name string
}

// classify finds rel's row in layers; ok is false for a package the table
// does not place.
func classify(rel string) (class, bool) {
	var c class
	best := -1
	for _, l := range layers {
		var row class
		matched := false
		if p, each := strings.CutSuffix(l.path, "/*"); each {
			if rest, found := strings.CutPrefix(rel, p+"/"); found {
				under, _, _ := strings.Cut(rest, "/")
				row, matched = class{l.kind, p + "/" + under}, true
			}
		} else if rel == p || strings.HasPrefix(rel, p+"/") {
			row, matched = class{l.kind, l.name}, true
		}
		if matched && len(l.path) > best {
			c, best = row, len(l.path)
		}
	}
	return c, best >= 0
}

// forbidden says why the import from → to breaks the layering; "" if it
// does not.
func forbidden(from, to string) string {
	cf, ok := classify(from)
	if !ok {
		return fmt.Sprintf("%s is in no row of the layers table: give it a kind", from)
	}
	ct, ok := classify(to)
	if !ok {
		return fmt.Sprintf("%s is in no row of the layers table: give it a kind", to)
	}
	if cf.kind == component && ct.kind == component && cf.name == ct.name {
		return ""
	}
	for _, k := range mayImport[cf.kind] {
		if k == ct.kind {
			return ""
		}
	}
	what := func(c class) string {
		if c.kind == component {
			return "component " + c.name
		}
		return c.kind.String()
	}
	return fmt.Sprintf("%s (%s) imports %s (%s)", from, what(cf), to, what(ct))
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		path string
		want class
	}{
		{"internal/apiserver/registry", class{component, "apiserver"}},
		{"internal/storage", class{component, "apiserver"}},
		{"internal/controllers/job", class{component, "internal/controllers/job"}},
		{"internal/controllers/endpointslice/sub", class{component, "internal/controllers/endpointslice"}},
		{"internal/controllers/history", class{leaf, ""}},
		{"internal/controllers", class{wiring, ""}},
		{"internal/controller/controllertest", class{testSupport, ""}},
		{"internal/controller", class{leaf, ""}},
		{"internal/runtime/image", class{component, "runtime"}},
		{"internal/kubeletapi", class{leaf, ""}},
		{"internal/kubelet/pleg", class{component, "kubelet"}},
		{"internal/agent", class{wiring, ""}},
		{"cmd/rudder", class{wiring, ""}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := classify(tc.path)
			if !ok || got != tc.want {
				t.Errorf("classify(%q) = %v, %v; want %v", tc.path, got, ok, tc.want)
			}
		})
	}
	if _, ok := classify("internal/nowhere"); ok {
		t.Error("a package in no row was classified")
	}
}

func TestForbidden(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		bad      bool
	}{
		{"internal/admission", "internal/controllers/resourcequota", true},
		{"internal/controllers/endpoints", "internal/controllers/endpointslice", true},
		{"internal/controllers/daemonset", "internal/scheduler/plugins", true},
		{"internal/apiserver", "internal/admission", true},
		{"internal/kubelet", "internal/runtime", true},
		{"internal/scheduler", "internal/clustertest", true},
		{"internal/quota", "internal/controllers/resourcequota", true},
		{"internal/apiserver/registry", "internal/apiserver/openapi", false},
		{"internal/controllers/daemonset", "internal/controllers/history", false},
		{"internal/admission", "internal/quota", false},
		{"internal/server", "internal/scheduler", false},
		{"internal/agent", "internal/runtime/image", false},
		{"internal/controllers", "internal/controllers/job", false},
	} {
		t.Run(tc.from+"->"+tc.to, func(t *testing.T) {
			if why := forbidden(tc.from, tc.to); (why != "") != tc.bad {
				t.Errorf("forbidden = %q, want forbidden %v", why, tc.bad)
			}
		})
	}
}

// TestLayering checks every import of every package of the module (tests'
// imports aside) against the table.
func TestLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	rel := func(p string) (string, bool) {
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	packages := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		from, ok := rel(fields[0])
		if !ok {
			continue // the module root has no package
		}
		packages++
		if _, ok := classify(from); !ok {
			t.Errorf("%s is in no row of the layers table: give it a kind", from)
			continue
		}
		for _, imp := range fields[1:] {
			if to, ok := rel(imp); ok {
				if why := forbidden(from, to); why != "" {
					t.Error(why)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if packages < 10 {
		t.Fatalf("go list found only %d packages of %s", packages, module)
	}
}
