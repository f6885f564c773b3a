package server

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestKubectl drives the real kubectl binary against a real server, the
// way a user does, and holds the answers to what Kubernetes prints: the
// same table columns, the same error text and the same exit codes. It
// complements the client-go tests: kubectl negotiates Tables, computes
// three-way patches, reads discovery and OpenAPI, and formats errors
// itself, and each of those is a way to differ from upstream that a typed
// client never sees.
//
// kubectl is $KUBECTL or the one on PATH; without it the test skips. One
// server serves all subtests, which build on each other's objects in
// order: the "demo" namespace of the quick start, "kinds" from testdata.
func TestKubectl(t *testing.T) {
	k := newKubectlEnv(t)
	basic := filepath.Join("..", "..", "examples", "basic.yaml")

	// The README's first five minutes, in order.
	t.Run("quick start", func(t *testing.T) {
		t.Run("get ns", func(t *testing.T) {
			tbls := parseTables(k.ok(t, "get", "ns"))
			if len(tbls) != 1 {
				t.Fatalf("want one table, got %d", len(tbls))
			}
			for _, ns := range []string{"default", "kube-node-lease", "kube-public", "kube-system"} {
				checkTable(t, tbls[0], cols("NAME|STATUS|AGE"), "NAME", ns, map[string]string{"STATUS": "Active"})
			}
		})
		k.runSteps(t, []step{
			{name: "create ns", args: []string{"create", "ns", "demo"}, out: "namespace/demo created"},
			{name: "apply", args: []string{"-n", "demo", "apply", "-f", basic}, out: strings.Join([]string{
				"configmap/web-config created", "secret/web-secret created", "service/web created",
				"pod/web created", "deployment.apps/web created"}, "\n")},
			// A re-apply sends no patch when nothing changed. The Secret is
			// "configured" every time, against Kubernetes too: stringData is
			// folded into data and never stored, so kubectl always finds it
			// missing (kubernetes/kubernetes#87736).
			{name: "re-apply", args: []string{"-n", "demo", "apply", "-f", basic}, out: strings.Join([]string{
				"configmap/web-config unchanged", "secret/web-secret configured", "service/web unchanged",
				"pod/web unchanged", "deployment.apps/web unchanged"}, "\n")},
		})
		t.Run("get all -o wide", func(t *testing.T) {
			// Deployment columns that a controller would change (UP-TO-DATE)
			// are left out; with no nodes, READY and AVAILABLE stay 0.
			tbls := parseTables(k.ok(t, "-n", "demo", "get", "all", "-o", "wide"))
			checkTable(t, tableWith(t, tbls, "pod/web"), cols("NAME|READY|STATUS|RESTARTS|AGE|IP|NODE|NOMINATED NODE|READINESS GATES"), "NAME", "pod/web",
				map[string]string{"READY": "0/1", "STATUS": "Pending", "RESTARTS": "0", "IP": "<none>", "NODE": "<none>", "NOMINATED NODE": "<none>", "READINESS GATES": "<none>"})
			checkTable(t, tableWith(t, tbls, "service/web"), cols("NAME|TYPE|CLUSTER-IP|EXTERNAL-IP|PORT(S)|AGE|SELECTOR"), "NAME", "service/web",
				map[string]string{"TYPE": "ClusterIP", "EXTERNAL-IP": "<none>", "PORT(S)": "80/TCP", "SELECTOR": "app=web"})
			checkTable(t, tableWith(t, tbls, "deployment.apps/web"), cols("NAME|READY|UP-TO-DATE|AVAILABLE|AGE|CONTAINERS|IMAGES|SELECTOR"), "NAME", "deployment.apps/web",
				map[string]string{"READY": "0/3", "AVAILABLE": "0", "CONTAINERS": "web", "IMAGES": "nginx:1.27", "SELECTOR": "app=web"})
		})
		t.Run("get pods -A", func(t *testing.T) {
			// The NAMESPACE column comes from each row's object metadata,
			// which the server must include in the Table.
			tbls := parseTables(k.ok(t, "get", "pods", "-A"))
			if len(tbls) != 1 {
				t.Fatalf("want one table, got %d", len(tbls))
			}
			checkTable(t, tbls[0], cols("NAMESPACE|NAME|READY|STATUS|RESTARTS|AGE"), "NAME", "web",
				map[string]string{"NAMESPACE": "demo", "READY": "0/1", "STATUS": "Pending", "RESTARTS": "0"})
		})
		k.runSteps(t, []step{
			{name: "selectors", args: []string{"get", "pods", "-A", "-l", "app=web", "--field-selector", "status.phase=Pending", "-o", "name"}, out: "pod/web"},
			{name: "selector matching nothing", args: []string{"-n", "demo", "get", "pods", "-l", "app=none"}, err: "No resources found in demo namespace."},
			// A pod that never reached a node has nothing to stop: it goes
			// at once, and kubectl's wait for it returns straight away.
			{name: "delete unscheduled pod", args: []string{"-n", "demo", "delete", "pod", "web"}, out: `pod "web" deleted`},
			{name: "deleted pod is gone", args: []string{"-n", "demo", "get", "pod", "web"}, code: 1, err: `Error from server (NotFound): pods "web" not found`},
			{name: "apply recreates it", args: []string{"-n", "demo", "apply", "-f", basic}, outHas: []string{"pod/web created", "deployment.apps/web unchanged"}},
		})
	})

	t.Run("tables", func(t *testing.T) { testKubectlTables(t, k) })
	t.Run("writes", func(t *testing.T) { testKubectlWrites(t, k) })
	t.Run("errors", func(t *testing.T) { testKubectlErrors(t, k) })
	t.Run("watch", func(t *testing.T) { testKubectlWatch(t, k) })
	t.Run("impersonation and rbac", func(t *testing.T) { testKubectlRBAC(t, k) })
	t.Run("discovery and health", func(t *testing.T) { testKubectlDiscovery(t, k) })
	t.Run("deletion", func(t *testing.T) { testKubectlDeletion(t, k) })
	t.Run("subresources", func(t *testing.T) { testKubectlSubresources(t, k) })
	t.Run("delete -f", func(t *testing.T) {
		k.runSteps(t, []step{{name: "basic.yaml", args: []string{"-n", "demo", "delete", "-f", basic}, out: strings.Join([]string{
			`configmap "web-config" deleted`, `secret "web-secret" deleted`, `service "web" deleted`,
			`pod "web" deleted`, `deployment.apps "web" deleted`}, "\n")}})
	})
}

// testKubectlTables checks `kubectl get` of every kind, plain and wide,
// against the columns Kubernetes prints, on objects from testdata whose
// cells do not depend on time.
func testKubectlTables(t *testing.T, k *kubectlEnv) {
	k.ok(t, "create", "ns", "kinds")
	k.ok(t, "-n", "kinds", "apply", "-f", filepath.Join("testdata", "kinds.yaml"))
	k.ok(t, "apply", "-f", filepath.Join("testdata", "cluster-kinds.yaml"))

	cases := []struct {
		name   string
		args   []string
		header string
		key    string // column that identifies the row; NAME when empty
		row    string
		cells  map[string]string
	}{
		{name: "namespaces", args: []string{"get", "namespaces"}, header: "NAME|STATUS|AGE", row: "kinds",
			cells: map[string]string{"STATUS": "Active"}},
		{name: "nodes", args: []string{"get", "nodes"}, header: "NAME|STATUS|ROLES|AGE|VERSION", row: "node-a",
			cells: map[string]string{"STATUS": "Unknown", "ROLES": "worker", "VERSION": ""}},
		{name: "nodes wide", args: []string{"get", "nodes", "-o", "wide"},
			header: "NAME|STATUS|ROLES|AGE|VERSION|INTERNAL-IP|EXTERNAL-IP|OS-IMAGE|KERNEL-VERSION|CONTAINER-RUNTIME", row: "node-a",
			cells: map[string]string{"INTERNAL-IP": "<none>", "EXTERNAL-IP": "<none>", "OS-IMAGE": "<unknown>", "KERNEL-VERSION": "<unknown>", "CONTAINER-RUNTIME": "<unknown>"}},
		{name: "services", args: []string{"-n", "kinds", "get", "services"}, header: "NAME|TYPE|CLUSTER-IP|EXTERNAL-IP|PORT(S)|AGE", row: "svc1",
			cells: map[string]string{"TYPE": "ClusterIP", "EXTERNAL-IP": "<none>", "PORT(S)": "5432/TCP"}},
		{name: "services wide", args: []string{"-n", "kinds", "get", "svc", "-o", "wide"}, header: "NAME|TYPE|CLUSTER-IP|EXTERNAL-IP|PORT(S)|AGE|SELECTOR", row: "svc1",
			cells: map[string]string{"SELECTOR": "app=db"}},
		{name: "endpoints", args: []string{"-n", "kinds", "get", "endpoints"}, header: "NAME|ENDPOINTS|AGE", row: "svc1",
			cells: map[string]string{"ENDPOINTS": "10.1.2.3:5432"}},
		{name: "endpointslices", args: []string{"-n", "kinds", "get", "endpointslices"}, header: "NAME|ADDRESSTYPE|PORTS|ENDPOINTS|AGE", row: "svc1-abc",
			cells: map[string]string{"ADDRESSTYPE": "IPv4", "PORTS": "5432", "ENDPOINTS": "10.1.2.3"}},
		{name: "configmaps", args: []string{"-n", "kinds", "get", "cm"}, header: "NAME|DATA|AGE", row: "cm1",
			cells: map[string]string{"DATA": "2"}},
		{name: "secrets", args: []string{"-n", "kinds", "get", "secrets"}, header: "NAME|TYPE|DATA|AGE", row: "sec1",
			cells: map[string]string{"TYPE": "Opaque", "DATA": "1"}},
		{name: "serviceaccounts", args: []string{"-n", "kinds", "get", "sa"}, header: "NAME|SECRETS|AGE", row: "sa1",
			cells: map[string]string{"SECRETS": "0"}},
		// Events have no NAME column until -o wide.
		{name: "events", args: []string{"-n", "kinds", "get", "events.v1."}, header: "LAST SEEN|TYPE|REASON|OBJECT|MESSAGE",
			key: "REASON", row: "Scheduled", cells: map[string]string{"TYPE": "Normal", "OBJECT": "pod/db-0", "MESSAGE": "assigned to node-a"}},
		{name: "events wide", args: []string{"-n", "kinds", "get", "events.v1.", "-o", "wide"},
			header: "LAST SEEN|TYPE|REASON|OBJECT|SUBOBJECT|SOURCE|MESSAGE|FIRST SEEN|COUNT|NAME", row: "ev1",
			cells: map[string]string{"SUBOBJECT": "", "SOURCE": "scheduler", "COUNT": "1"}},
		{name: "events.k8s.io", args: []string{"-n", "kinds", "get", "events.v1.events.k8s.io", "-o", "wide"},
			header: "LAST SEEN|TYPE|REASON|OBJECT|SUBOBJECT|SOURCE|MESSAGE|FIRST SEEN|COUNT|NAME", row: "ev2",
			cells: map[string]string{"REASON": "Pulled", "OBJECT": "pod/db-0", "SOURCE": "example.com/kubelet, node-a", "MESSAGE": "image pulled", "COUNT": "1"}},
		// Upstream stores both event APIs as one resource: an event written
		// through events.k8s.io (as kube-scheduler does) is a core event
		// too, and `kubectl describe pod` finds it there.
		{name: "events.k8s.io events are core events", args: []string{"-n", "kinds", "get", "events", "-o", "wide"},
			header: "LAST SEEN|TYPE|REASON|OBJECT|SUBOBJECT|SOURCE|MESSAGE|FIRST SEEN|COUNT|NAME", row: "ev2",
			cells: map[string]string{"REASON": "Pulled", "MESSAGE": "image pulled"}},
		{name: "deployments", args: []string{"-n", "demo", "get", "deploy"}, header: "NAME|READY|UP-TO-DATE|AVAILABLE|AGE", row: "web",
			cells: map[string]string{"READY": "0/3", "AVAILABLE": "0"}},
		{name: "replicasets", args: []string{"-n", "kinds", "get", "rs"}, header: "NAME|DESIRED|CURRENT|READY|AGE", row: "rs1",
			cells: map[string]string{"DESIRED": "2", "READY": "0"}},
		{name: "replicasets wide", args: []string{"-n", "kinds", "get", "rs", "-o", "wide"}, header: "NAME|DESIRED|CURRENT|READY|AGE|CONTAINERS|IMAGES|SELECTOR", row: "rs1",
			cells: map[string]string{"CONTAINERS": "c", "IMAGES": "busybox:1.36", "SELECTOR": "app=rs1"}},
		{name: "statefulsets", args: []string{"-n", "kinds", "get", "sts"}, header: "NAME|READY|AGE", row: "db",
			cells: map[string]string{"READY": "0/1"}},
		{name: "statefulsets wide", args: []string{"-n", "kinds", "get", "sts", "-o", "wide"}, header: "NAME|READY|AGE|CONTAINERS|IMAGES", row: "db",
			cells: map[string]string{"READY": "0/1", "CONTAINERS": "pg", "IMAGES": "postgres:16"}},
		{name: "daemonsets", args: []string{"-n", "kinds", "get", "ds"}, header: "NAME|DESIRED|CURRENT|READY|UP-TO-DATE|AVAILABLE|NODE SELECTOR|AGE", row: "agent",
			cells: map[string]string{"DESIRED": "0", "CURRENT": "0", "READY": "0", "UP-TO-DATE": "0", "AVAILABLE": "0", "NODE SELECTOR": "kubernetes.io/os=linux"}},
		{name: "daemonsets wide", args: []string{"-n", "kinds", "get", "ds", "-o", "wide"},
			header: "NAME|DESIRED|CURRENT|READY|UP-TO-DATE|AVAILABLE|NODE SELECTOR|AGE|CONTAINERS|IMAGES|SELECTOR", row: "agent",
			cells: map[string]string{"CONTAINERS": "agent", "IMAGES": "busybox:1.36", "SELECTOR": "app=agent"}},
		{name: "controllerrevisions", args: []string{"-n", "kinds", "get", "controllerrevisions"}, header: "NAME|CONTROLLER|REVISION|AGE", row: "db-7d9f8",
			cells: map[string]string{"CONTROLLER": "<none>", "REVISION": "3"}},
		{name: "jobs", args: []string{"-n", "kinds", "get", "jobs"}, header: "NAME|STATUS|COMPLETIONS|DURATION|AGE", row: "once",
			cells: map[string]string{"STATUS": "Running", "COMPLETIONS": "0/2", "DURATION": ""}},
		{name: "jobs wide", args: []string{"-n", "kinds", "get", "jobs", "-o", "wide"}, header: "NAME|STATUS|COMPLETIONS|DURATION|AGE|CONTAINERS|IMAGES|SELECTOR", row: "once",
			cells: map[string]string{"CONTAINERS": "c", "IMAGES": "busybox:1.36"}},
		{name: "cronjobs", args: []string{"-n", "kinds", "get", "cronjobs"}, header: "NAME|SCHEDULE|TIMEZONE|SUSPEND|ACTIVE|LAST SCHEDULE|AGE", row: "nightly",
			cells: map[string]string{"SCHEDULE": "0 3 * * *", "TIMEZONE": "Etc/UTC", "SUSPEND": "False", "ACTIVE": "0", "LAST SCHEDULE": "<none>"}},
		{name: "cronjobs wide", args: []string{"-n", "kinds", "get", "cj", "-o", "wide"},
			header: "NAME|SCHEDULE|TIMEZONE|SUSPEND|ACTIVE|LAST SCHEDULE|AGE|CONTAINERS|IMAGES|SELECTOR", row: "nightly",
			cells: map[string]string{"CONTAINERS": "c", "IMAGES": "busybox:1.36", "SELECTOR": "<none>"}},
		{name: "leases", args: []string{"-n", "kinds", "get", "leases"}, header: "NAME|HOLDER|AGE", row: "lock1",
			cells: map[string]string{"HOLDER": "node-a"}},
		{name: "roles", args: []string{"-n", "kinds", "get", "roles"}, header: "NAME|CREATED AT", row: "reader"},
		{name: "rolebindings wide", args: []string{"-n", "kinds", "get", "rolebindings", "-o", "wide"},
			header: "NAME|ROLE|AGE|USERS|GROUPS|SERVICEACCOUNTS", row: "reader-bob",
			cells: map[string]string{"ROLE": "Role/reader", "USERS": "bob", "GROUPS": "", "SERVICEACCOUNTS": "kinds/sa1"}},
		{name: "clusterroles", args: []string{"get", "clusterroles"}, header: "NAME|CREATED AT", row: "e2e-reader"},
		{name: "clusterrolebindings wide", args: []string{"get", "clusterrolebindings", "-o", "wide"},
			header: "NAME|ROLE|AGE|USERS|GROUPS|SERVICEACCOUNTS", row: "e2e-reader-ops",
			cells: map[string]string{"ROLE": "ClusterRole/e2e-reader", "USERS": "", "GROUPS": "ops", "SERVICEACCOUNTS": ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbls := parseTables(k.ok(t, c.args...))
			if len(tbls) != 1 {
				t.Fatalf("want one table, got %d: %v", len(tbls), tbls)
			}
			key := c.key
			if key == "" {
				key = "NAME"
			}
			checkTable(t, tbls[0], cols(c.header), key, c.row, c.cells)
		})
	}

	t.Run("get all expands the category", func(t *testing.T) {
		// "all" is pods, services, daemonsets, deployments, replicasets,
		// statefulsets, cronjobs and jobs, in kubectl's order.
		var kinds []string
		for _, tbl := range parseTables(k.ok(t, "-n", "kinds", "get", "all")) {
			if len(tbl.rows) > 0 {
				name, _, _ := strings.Cut(tbl.rows[0]["NAME"], "/")
				kinds = append(kinds, name)
			}
		}
		// In order, though pods would come first once controllers make them.
		want := []string{"service", "daemonset.apps", "replicaset.apps", "statefulset.apps", "cronjob.batch", "job.batch"}
		if i := slices.Index(kinds, want[0]); i < 0 || !slices.Equal(kinds[i:], want) {
			t.Errorf("get all printed %v, want %v", kinds, want)
		}
	})
}

// testKubectlWrites covers the commands that change objects: scale, label,
// annotate, the three patch types and the create generators.
func testKubectlWrites(t *testing.T, k *kubectlEnv) {
	jp := func(ns, obj, path string) []string {
		return []string{"-n", ns, "get", obj, "-o", "jsonpath={" + path + "}"}
	}
	k.runSteps(t, []step{
		{name: "scale deployment", args: []string{"-n", "demo", "scale", "deploy/web", "--replicas=5"}, out: "deployment.apps/web scaled"},
		{name: "deployment replicas", args: jp("demo", "deploy/web", ".spec.replicas"), out: "5"},
		{name: "scale replicaset", args: []string{"-n", "kinds", "scale", "rs/rs1", "--replicas=3"}, out: "replicaset.apps/rs1 scaled"},
		{name: "replicaset replicas", args: jp("kinds", "rs/rs1", ".spec.replicas"), out: "3"},
		{name: "scale statefulset", args: []string{"-n", "kinds", "scale", "statefulset/db", "--replicas=2"}, out: "statefulset.apps/db scaled"},
		{name: "statefulset replicas", args: jp("kinds", "sts/db", ".spec.replicas"), out: "2"},
		// Jobs have no /scale: kubectl asks for it and reports the 404.
		{name: "scale a job is refused", args: []string{"-n", "kinds", "scale", "job/once", "--replicas=2"}, code: 1,
			err: "Error from server (NotFound): the server could not find the requested resource"},

		{name: "label", args: []string{"-n", "demo", "label", "pod", "web", "tier=frontend"}, out: "pod/web labeled"},
		{name: "label selects", args: []string{"-n", "demo", "get", "pods", "-l", "tier=frontend", "-o", "name"}, out: "pod/web"},
		{name: "label remove", args: []string{"-n", "demo", "label", "pod", "web", "tier-"}, out: "pod/web unlabeled"},
		// Endpoints has no update validation of its own: the generic
		// metadata checks and Validate apply.
		{name: "label endpoints", args: []string{"-n", "kinds", "label", "endpoints", "svc1", "role=primary"}, out: "endpoints/svc1 labeled",
			err: "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"},
		{name: "annotate", args: []string{"-n", "demo", "annotate", "deploy", "web", "owner=team-a"}, out: "deployment.apps/web annotated"},
		{name: "annotation stored", args: jp("demo", "deploy/web", ".metadata.annotations.owner"), out: "team-a"},

		// The three patch types differ on lists: strategic merges
		// containers by name (a new one goes first, as upstream's
		// strategicpatch orders it), merge replaces the list, json edits by
		// index.
		{name: "create deployment", args: []string{"-n", "demo", "create", "deployment", "gen-dep", "--image=nginx:1.27", "--replicas=2"}, out: "deployment.apps/gen-dep created"},
		{name: "patch strategic", args: []string{"-n", "demo", "patch", "deploy", "gen-dep", "--type=strategic", "-p",
			`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.36"}]}}}}`}, out: "deployment.apps/gen-dep patched"},
		{name: "strategic merged the list", args: jp("demo", "deploy/gen-dep", ".spec.template.spec.containers[*].name"), out: "sidecar nginx"},
		{name: "patch json", args: []string{"-n", "demo", "patch", "deploy", "gen-dep", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"busybox:1.37"},{"op":"replace","path":"/spec/replicas","value":4}]`},
			out: "deployment.apps/gen-dep patched"},
		{name: "json edited by index", args: jp("demo", "deploy/gen-dep", ".spec.replicas} {.spec.template.spec.containers[0].image"), out: "4 busybox:1.37"},
		{name: "patch merge", args: []string{"-n", "demo", "patch", "deploy", "gen-dep", "--type=merge", "-p",
			`{"spec":{"paused":true,"template":{"spec":{"containers":[{"name":"only","image":"nginx:1.27"}]}}}}`}, out: "deployment.apps/gen-dep patched"},
		{name: "merge replaced the list", args: jp("demo", "deploy/gen-dep", ".spec.paused} {.spec.template.spec.containers[*].name"), out: "true only"},
		// An unchanged object keeps its resourceVersion; kubectl tells.
		{name: "patch without change", args: []string{"-n", "demo", "patch", "deploy", "gen-dep", "--type=merge", "-p", `{"spec":{"paused":true}}`},
			out: "deployment.apps/gen-dep patched (no change)"},
		{name: "patch invalid", args: []string{"-n", "demo", "patch", "deploy", "gen-dep", "--type=merge", "-p", `{"spec":{"replicas":-1}}`}, code: 1,
			err: `The Deployment "gen-dep" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},

		{name: "create configmap", args: []string{"-n", "demo", "create", "configmap", "gen-cm", "--from-literal=a=b"}, out: "configmap/gen-cm created"},
		{name: "create secret", args: []string{"-n", "demo", "create", "secret", "generic", "gen-sec", "--from-literal=p=q"}, out: "secret/gen-sec created"},
		{name: "secret data", args: jp("demo", "secret/gen-sec", ".type} {.data.p"), out: "Opaque cQ=="},
		{name: "create serviceaccount", args: []string{"-n", "demo", "create", "serviceaccount", "gen-sa"}, out: "serviceaccount/gen-sa created"},
		{name: "create role", args: []string{"-n", "demo", "create", "role", "gen-role", "--verb=get,list", "--resource=pods,deployments.apps"},
			out: "role.rbac.authorization.k8s.io/gen-role created"},
		{name: "create rolebinding", args: []string{"-n", "demo", "create", "rolebinding", "gen-rb", "--role=gen-role", "--serviceaccount=demo:gen-sa"},
			out: "rolebinding.rbac.authorization.k8s.io/gen-rb created"},
		{name: "create clusterrole", args: []string{"create", "clusterrole", "gen-cr", "--verb=list", "--resource=nodes"},
			out: "clusterrole.rbac.authorization.k8s.io/gen-cr created"},
		{name: "create clusterrolebinding", args: []string{"create", "clusterrolebinding", "gen-crb", "--clusterrole=gen-cr", "--group=ops"},
			out: "clusterrolebinding.rbac.authorization.k8s.io/gen-crb created"},
		{name: "create job", args: []string{"-n", "demo", "create", "job", "gen-job", "--image=busybox:1.36", "--", "echo", "hi"}, out: "job.batch/gen-job created"},
		// The server generates a Job's selector and labels its template.
		{name: "job selector defaulted", args: jp("demo", "job/gen-job", ".spec.template.metadata.labels.job-name"), out: "gen-job"},
		{name: "create cronjob", args: []string{"-n", "demo", "create", "cronjob", "gen-cj", "--image=busybox:1.36", "--schedule=*/5 * * * *", "--", "echo", "hi"},
			out: "cronjob.batch/gen-cj created"},
		{name: "cronjob defaults", args: jp("demo", "cj/gen-cj", ".spec.concurrencyPolicy} {.spec.suspend} {.spec.successfulJobsHistoryLimit"), out: "Allow false 3"},
		{name: "create job from cronjob", args: []string{"-n", "demo", "create", "job", "from-cj", "--from=cronjob/gen-cj"}, out: "job.batch/from-cj created"},
		{name: "deployment defaults", args: jp("demo", "deploy/gen-dep", ".spec.strategy.type} {.spec.revisionHistoryLimit} {.spec.progressDeadlineSeconds"),
			out: "RollingUpdate 10 600"},

		// What the server defaults in a pod, as upstream's defaulting and
		// PrepareForCreate do.
		{name: "pod defaults", args: jp("demo", "pod/web", ".spec.dnsPolicy} {.spec.restartPolicy} {.spec.schedulerName} "+
			"{.spec.containers[0].imagePullPolicy} {.spec.containers[0].terminationMessagePolicy} {.spec.terminationGracePeriodSeconds} "+
			"{.spec.enableServiceLinks} {.status.phase} {.status.qosClass"),
			out: "ClusterFirst Always default-scheduler IfNotPresent File 30 true Pending BestEffort"},
		{name: "set image", args: []string{"-n", "demo", "set", "image", "deploy/gen-dep", "only=nginx:1.28"}, out: "deployment.apps/gen-dep image updated"},
		{name: "rollout resume", args: []string{"-n", "demo", "rollout", "resume", "deploy/gen-dep"}, out: "deployment.apps/gen-dep resumed"},
		{name: "rollout restart", args: []string{"-n", "demo", "rollout", "restart", "deploy/gen-dep"}, out: "deployment.apps/gen-dep restarted"},
		{name: "restart annotates the template", args: jp("demo", "deploy/gen-dep", ".spec.template.metadata.annotations"),
			outHas: []string{`kubectl.kubernetes.io/restartedAt`}},
		// diff sends a server-side dry run of the apply: the live object
		// must not change, and the exit code says there is a difference.
		{name: "diff", args: []string{"-n", "demo", "diff", "-f", filepath.Join("..", "..", "examples", "basic.yaml")}, code: 1,
			outHas: []string{"-  replicas: 5\n+  replicas: 3\n"}},
		{name: "diff changed nothing", args: jp("demo", "deploy/web", ".spec.replicas"), out: "5"},
		{name: "cordon", args: []string{"cordon", "node-a"}, out: "node/node-a cordoned"},
		{name: "cordoned node", args: []string{"get", "node", "node-a"},
			check: tableCheck("NAME|STATUS|ROLES|AGE|VERSION", "node-a", map[string]string{"STATUS": "Unknown,SchedulingDisabled"})},
		{name: "taint", args: []string{"taint", "node", "node-a", "dedicated=db:NoSchedule"}, out: "node/node-a tainted"},
		{name: "uncordon", args: []string{"uncordon", "node-a"}, out: "node/node-a uncordoned"},
		{name: "node spec", args: []string{"get", "node", "node-a", "-o", "jsonpath=[{.spec.unschedulable}] {.spec.taints[0].key}={.spec.taints[0].value}:{.spec.taints[0].effect}"},
			out: "[] dedicated=db:NoSchedule"},

		// A list read in pages of one must print what one page does.
		{name: "get in chunks", args: []string{"-n", "demo", "get", "cm,secret,deploy", "--chunk-size=1", "-o", "name"},
			out: "configmap/gen-cm\nconfigmap/web-config\nsecret/gen-sec\nsecret/web-secret\ndeployment.apps/gen-dep\ndeployment.apps/web"},
		{name: "get -o name", args: []string{"-n", "demo", "get", "cm,secret", "-o", "name"},
			out: "configmap/gen-cm\nconfigmap/web-config\nsecret/gen-sec\nsecret/web-secret"},
		{name: "get -o yaml", args: []string{"-n", "demo", "get", "cm", "gen-cm", "-o", "yaml"},
			outHas: []string{"apiVersion: v1\ndata:\n  a: b\nkind: ConfigMap\nmetadata:\n", "  name: gen-cm\n  namespace: demo\n", "  uid: "}},
		{name: "get -o json list", args: []string{"-n", "demo", "get", "deploy", "-o", "json"},
			outHas: []string{`"apiVersion": "v1"`, `"kind": "List"`, `"kind": "Deployment"`, `"name": "gen-dep"`, `"resourceVersion": ""`}},
	})

	t.Run("describe", func(t *testing.T) {
		// describe reads the object and, for many kinds, related ones
		// (events by field selector, a deployment's replica sets).
		for _, obj := range []string{"pod/web", "deploy/gen-dep", "svc/web", "cm/gen-cm", "secret/gen-sec", "sa/gen-sa",
			"job/gen-job", "cronjob/gen-cj", "rolebinding/gen-rb", "ns/demo", "node/node-a", "clusterrole/gen-cr"} {
			out := k.ok(t, "-n", "demo", "describe", obj)
			_, name, _ := strings.Cut(obj, "/")
			if !regexp.MustCompile(`(?m)^Name:\s+` + regexp.QuoteMeta(name) + `$`).MatchString(out) {
				t.Errorf("describe %s: no Name line:\n%s", obj, out)
			}
		}
	})
}

// testKubectlErrors holds kubectl's rendering of the server's errors:
// reason in parentheses, the object named as upstream names it, exit 1.
func testKubectlErrors(t *testing.T, k *kubectlEnv) {
	badName := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers:\n  - name: c\n    image: nginx\n"
	noImage := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: noimage\nspec:\n  containers:\n  - name: c\n"
	mismatch := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: mismatch
spec:
  selector:
    matchLabels: {app: a}
  template:
    metadata:
      labels: {app: b}
    spec:
      containers: [{name: c, image: nginx}]
`
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n"
	k.runSteps(t, []step{
		{name: "not found", args: []string{"-n", "demo", "get", "pod", "nope"}, code: 1, err: `Error from server (NotFound): pods "nope" not found`},
		{name: "not found in a group", args: []string{"-n", "demo", "get", "deploy", "nope"}, code: 1,
			err: `Error from server (NotFound): deployments.apps "nope" not found`},
		{name: "unknown resource", args: []string{"get", "nopes"}, code: 1, err: `error: the server doesn't have a resource type "nopes"`},
		{name: "namespace exists", args: []string{"create", "ns", "demo"}, code: 1,
			err: `Error from server (AlreadyExists): namespaces "demo" already exists`},
		{name: "object exists", args: []string{"-n", "demo", "create", "-f", "-"}, stdin: cm, code: 1,
			err: `Error from server (AlreadyExists): error when creating "STDIN": configmaps "web-config" already exists`},
		{name: "generator object exists", args: []string{"-n", "demo", "create", "cm", "gen-cm"}, code: 1,
			err: `error: failed to create configmap: configmaps "gen-cm" already exists`},
		{name: "bad name", args: []string{"-n", "demo", "create", "-f", "-"}, stdin: badName, code: 1,
			err: `The Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{name: "missing image", args: []string{"-n", "demo", "apply", "-f", "-"}, stdin: noImage, code: 1,
			err: `The Pod "noimage" is invalid: spec.containers[0].image: Required value`},
		{name: "selector does not match labels", args: []string{"-n", "demo", "create", "-f", "-"}, stdin: mismatch, code: 1,
			errHas: []string{"The Deployment \"mismatch\" is invalid: spec.template.metadata.labels: Invalid value: ", "`selector` does not match template `labels`"}},
		{name: "several causes", args: []string{"-n", "demo", "run", "Bad_Name", "--image=nginx"}, code: 1,
			errHas: []string{"The Pod \"Bad_Name\" is invalid: \n* metadata.name: Invalid value: \"Bad_Name\"", "\n* spec.containers[0].name: Invalid value: \"Bad_Name\""}},
		{name: "missing namespace", args: []string{"-n", "nope", "apply", "-f", "-"}, stdin: cm, code: 1,
			err: `Error from server (NotFound): error when creating "STDIN": namespaces "nope" not found`},
		{name: "missing namespace generator", args: []string{"-n", "nope", "create", "cm", "x"}, code: 1,
			err: `error: failed to create configmap: namespaces "nope" not found`},
		{name: "immutable field", args: []string{"-n", "kinds", "patch", "job", "once", "--type=merge", "-p", `{"spec":{"completions":5}}`}, code: 1,
			errHas: []string{`The Job "once" is invalid: spec.completions: Invalid value: 5: field is immutable`}},
	})
}

// testKubectlWatch runs `kubectl get pods -A -w` as a user does: the table
// first, then a row for each change, until the process is stopped.
func testKubectlWatch(t *testing.T, k *kubectlEnv) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.Bin, "get", "pods", "-A", "-w", "--request-timeout=60s")
	cmd.Env = k.Env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// stop ends kubectl by its PID (-w never ends on its own) and waits for
	// it; only then is stderr safe to read.
	stopped := false
	stop := func() string {
		if !stopped {
			stopped = true
			cmd.Process.Kill()
			for range lines {
			}
			cmd.Wait()
		}
		return stderr.String()
	}
	defer stop()

	// next consumes lines until one satisfies match, or fails.
	next := func(what string, match func(fields []string) bool) {
		t.Helper()
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("kubectl exited before %s; stderr: %s", what, stop())
				}
				if match(strings.Fields(line)) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no %s within %v; stderr: %s", what, kubectlTimeout, stop())
			}
		}
	}
	next("header", func(f []string) bool {
		return slices.Equal(f, []string{"NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"})
	})
	// The header follows the initial list, so the pod arrives as a watch
	// event; had it been listed, kubectl would print the same row.
	k.ok(t, "-n", "demo", "run", "watched", "--image=nginx:1.27")
	row := func(f []string) bool {
		return len(f) == 6 && f[0] == "demo" && f[1] == "watched" && f[2] == "0/1" && f[3] == "Pending"
	}
	next("row of the new pod", row)
	// A second row for the pod can only come from the MODIFIED event.
	k.ok(t, "-n", "demo", "label", "pod", "watched", "seen=yes")
	next("row of the modified pod", row)
}

// testKubectlRBAC impersonates an ordinary user: forbidden first, then
// allowed to read (not delete) in one namespace by a RoleBinding to the
// bootstrap "view" role.
func testKubectlRBAC(t *testing.T, k *kubectlEnv) {
	k.runSteps(t, []step{
		{name: "forbidden list", args: []string{"--as=jane", "get", "pods"}, code: 1,
			err: `Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"`},
		{name: "forbidden cluster scope", args: []string{"--as=jane", "get", "nodes"}, code: 1,
			err: `Error from server (Forbidden): nodes is forbidden: User "jane" cannot list resource "nodes" in API group "" at the cluster scope`},
		{name: "grant view", args: []string{"-n", "demo", "create", "rolebinding", "jane-view", "--clusterrole=view", "--user=jane"},
			out: "rolebinding.rbac.authorization.k8s.io/jane-view created"},
		{name: "allowed list", args: []string{"--as=jane", "-n", "demo", "get", "pods", "web", "-o", "name"}, out: "pod/web"},
		{name: "allowed in a group", args: []string{"--as=jane", "-n", "demo", "get", "deploy", "-o", "name"}, outHas: []string{"deployment.apps/web"}},
		{name: "view excludes secrets", args: []string{"--as=jane", "-n", "demo", "get", "secrets"}, code: 1,
			err: `Error from server (Forbidden): secrets is forbidden: User "jane" cannot list resource "secrets" in API group "" in the namespace "demo"`},
		{name: "forbidden delete", args: []string{"--as=jane", "-n", "demo", "delete", "pod", "web"}, code: 1,
			err: `Error from server (Forbidden): pods "web" is forbidden: User "jane" cannot delete resource "pods" in API group "" in the namespace "demo"`},
		{name: "forbidden scale", args: []string{"--as=jane", "-n", "demo", "scale", "deploy/web", "--replicas=1"}, code: 1,
			errHas: []string{`deployments.apps "web" is forbidden: User "jane" cannot patch resource "deployments/scale" in API group "apps" in the namespace "demo"`}},
		{name: "other namespace still forbidden", args: []string{"--as=jane", "-n", "kinds", "get", "pods"}, code: 1,
			err: `Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "kinds"`},
	})
}

// testKubectlDiscovery checks what kubectl learns from discovery and the
// server's non-resource endpoints.
func testKubectlDiscovery(t *testing.T, k *kubectlEnv) {
	t.Run("api-resources", func(t *testing.T) {
		tbls := parseTables(k.ok(t, "api-resources"))
		if len(tbls) != 1 {
			t.Fatalf("want one table, got %d", len(tbls))
		}
		tbl := tbls[0]
		if want := cols("NAME|SHORTNAMES|APIVERSION|NAMESPACED|KIND"); !slices.Equal(tbl.header, want) {
			t.Fatalf("header %q, want %q", tbl.header, want)
		}
		want := []string{ // NAME SHORTNAMES APIVERSION NAMESPACED KIND, as upstream prints them
			"namespaces ns v1 false Namespace", "pods po v1 true Pod", "nodes no v1 false Node",
			"services svc v1 true Service", "endpoints ep v1 true Endpoints", "configmaps cm v1 true ConfigMap",
			"secrets - v1 true Secret", "serviceaccounts sa v1 true ServiceAccount", "events ev v1 true Event",
			"deployments deploy apps/v1 true Deployment", "replicasets rs apps/v1 true ReplicaSet",
			"statefulsets sts apps/v1 true StatefulSet", "daemonsets ds apps/v1 true DaemonSet",
			"controllerrevisions - apps/v1 true ControllerRevision",
			"jobs - batch/v1 true Job", "cronjobs cj batch/v1 true CronJob",
			"leases - coordination.k8s.io/v1 true Lease", "events ev events.k8s.io/v1 true Event",
			"endpointslices - discovery.k8s.io/v1 true EndpointSlice",
			"roles - rbac.authorization.k8s.io/v1 true Role", "rolebindings - rbac.authorization.k8s.io/v1 true RoleBinding",
			"clusterroles - rbac.authorization.k8s.io/v1 false ClusterRole",
			"clusterrolebindings - rbac.authorization.k8s.io/v1 false ClusterRoleBinding",
		}
		var got []string
		for _, r := range tbl.rows {
			short := r["SHORTNAMES"]
			if short == "" {
				short = "-"
			}
			got = append(got, strings.Join([]string{r["NAME"], short, r["APIVERSION"], r["NAMESPACED"], r["KIND"]}, " "))
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("api-resources lacks %q", w)
			}
		}
	})
	k.runSteps(t, []step{
		{name: "version", args: []string{"version"}, outHas: []string{"Client Version: ", "Server Version: v1.36."}},
		{name: "healthz", args: []string{"get", "--raw", "/healthz"}, out: "ok"},
		{name: "livez", args: []string{"get", "--raw", "/livez"}, out: "ok"},
		{name: "readyz verbose", args: []string{"get", "--raw", "/readyz?verbose"}, outHas: []string{"[+]ping ok\n", "[+]etcd ok\n", "readyz check passed"}},
		{name: "metrics", args: []string{"get", "--raw", "/metrics"}, outHas: []string{"# TYPE apiserver_request_total counter", `apiserver_request_total{`}},
		// client-go's legacy discovery reads /api/v1 like /apis/apps/v1.
		{name: "legacy discovery", args: []string{"get", "--raw", "/api/v1"}, outHas: []string{`"kind":"APIResourceList"`, `"groupVersion":"v1"`, `"name":"pods"`}},
		{name: "group discovery", args: []string{"get", "--raw", "/apis/apps/v1"}, outHas: []string{`"kind":"APIResourceList"`, `"name":"deployments/scale"`}},
		// v1 Endpoints is deprecated since 1.33: every request carries the
		// warning, and kubectl prints it.
		{name: "deprecated kind warns", args: []string{"-n", "kinds", "get", "endpoints", "-o", "name"}, out: "endpoints/svc1",
			err: "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"},
	})
}

// testKubectlDeletion covers deletion that does not finish at once: a pod
// on a node (graceful) and an object held by a finalizer.
func testKubectlDeletion(t *testing.T, k *kubectlEnv) {
	podOnNode := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  nodeName: node-a\n  terminationGracePeriodSeconds: 30\n  containers:\n  - name: c\n    image: nginx\n"
	held := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n"
	k.runSteps(t, []step{
		{name: "create pod on a node", args: []string{"-n", "demo", "apply", "-f", "-"}, stdin: podOnNode, out: "pod/p created"},
		// The pod's kubelet has to stop it first: the server only marks it.
		{name: "graceful delete", args: []string{"-n", "demo", "delete", "pod", "p", "--wait=false"}, out: `pod "p" deleted`},
		{name: "shows Terminating", args: []string{"-n", "demo", "get", "pod", "p"},
			check: tableCheck("NAME|READY|STATUS|RESTARTS|AGE", "p", map[string]string{"READY": "0/1", "STATUS": "Terminating", "RESTARTS": "0"})},
		{name: "grace recorded", args: []string{"-n", "demo", "get", "pod", "p", "-o", "jsonpath={.metadata.deletionGracePeriodSeconds}"}, out: "30"},
		{name: "force delete", args: []string{"-n", "demo", "delete", "pod", "p", "--grace-period=0", "--force"}, out: `pod "p" force deleted`,
			errHas: []string{"Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated."}},
		{name: "force deleted pod is gone", args: []string{"-n", "demo", "get", "pod", "p"}, code: 1, err: `Error from server (NotFound): pods "p" not found`},

		{name: "create held object", args: []string{"-n", "demo", "apply", "-f", "-"}, stdin: held, out: "configmap/held created"},
		{name: "delete held object", args: []string{"-n", "demo", "delete", "cm", "held", "--wait=false"}, out: `configmap "held" deleted`},
		{name: "still there, marked", args: []string{"-n", "demo", "get", "cm", "held", "-o", "jsonpath={.metadata.finalizers[0]} {.metadata.deletionTimestamp}"},
			outHas: []string{"example.com/hold 20"}},
		{name: "no new finalizers while deleting", args: []string{"-n", "demo", "patch", "cm", "held", "--type=json", "-p", `[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/late"}]`},
			code: 1, errHas: []string{`The ConfigMap "held" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted`}},
	})
	// A namespace waits for the namespace controller to empty it; until
	// then admission refuses new content, and the system ones never go.
	k.runSteps(t, []step{
		{name: "create namespace", args: []string{"create", "ns", "doomed"}, out: "namespace/doomed created"},
		{name: "delete namespace", args: []string{"delete", "ns", "doomed", "--wait=false"}, out: `namespace "doomed" deleted`},
		{name: "namespace terminating", args: []string{"get", "ns", "doomed"},
			check: tableCheck("NAME|STATUS|AGE", "doomed", map[string]string{"STATUS": "Terminating"})},
		{name: "no new content", args: []string{"-n", "doomed", "create", "cm", "late"}, code: 1,
			err: `error: failed to create configmap: configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated`},
		{name: "default is immortal", args: []string{"delete", "ns", "default"}, code: 1,
			err: `Error from server (Forbidden): namespaces "default" is forbidden: this namespace may not be deleted`},
	})
	t.Run("finalizer removed", func(t *testing.T) {
		// kubectl wait lists the object and watches it from the list's
		// resourceVersion until the deletion completes, which removing the
		// last finalizer does in that same write. Its request log (-v=6)
		// says when the watch is open; removing the finalizer before that
		// could let wait find nothing and print nothing.
		ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
		defer cancel()
		wait := exec.CommandContext(ctx, k.Bin, "-n", "demo", "wait", "--for=delete", "cm/held", "--timeout=25s", "-v=6")
		wait.Env = k.Env
		var out bytes.Buffer
		wait.Stdout = &out
		log, err := wait.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := wait.Start(); err != nil {
			t.Fatal(err)
		}
		watching := make(chan struct{})
		logDone := make(chan struct{})
		go func() {
			defer close(logDone)
			sc := bufio.NewScanner(log)
			open := false
			for sc.Scan() {
				if l := sc.Text(); !open && strings.Contains(l, "watch=true") && strings.Contains(l, " 200 OK") {
					open = true
					close(watching)
				}
			}
		}()
		select {
		case <-watching:
		case <-logDone:
		case <-ctx.Done():
		}
		k.runSteps(t, []step{
			{name: "remove finalizer", args: []string{"-n", "demo", "patch", "cm", "held", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`},
				out: "configmap/held patched"},
			{name: "held object is gone", args: []string{"-n", "demo", "get", "cm", "held"}, code: 1, err: `Error from server (NotFound): configmaps "held" not found`},
		})
		<-logDone
		if err := wait.Wait(); err != nil || strings.TrimSpace(out.String()) != "configmap/held condition met" {
			t.Errorf("kubectl wait --for=delete: %v, stdout %q", err, out.String())
		}
	})
}

// testKubectlSubresources writes /status (as a kubelet would), /binding
// (as a scheduler would), and checks the spec/status split.
func testKubectlSubresources(t *testing.T, k *kubectlEnv) {
	binding := filepath.Join(t.TempDir(), "binding.json")
	if err := os.WriteFile(binding, []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"bind-me"},"target":{"kind":"Node","name":"node-a"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	nodeStatus := `{"status":{"nodeInfo":{"kubeletVersion":"v1.36.3"},"addresses":[{"type":"InternalIP","address":"10.0.0.5"}],` +
		`"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"ok","lastHeartbeatTime":"2024-01-01T00:00:00Z","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}`
	k.runSteps(t, []step{
		{name: "pod status", args: []string{"-n", "demo", "patch", "pod", "web", "--subresource=status", "--type=merge", "-p",
			`{"status":{"phase":"Running","podIP":"10.244.0.7","podIPs":[{"ip":"10.244.0.7"}]}}`}, out: "pod/web patched"},
		{name: "pod shows status", args: []string{"-n", "demo", "get", "pod", "web", "-o", "wide"},
			check: tableCheck("NAME|READY|STATUS|RESTARTS|AGE|IP|NODE|NOMINATED NODE|READINESS GATES", "web",
				map[string]string{"STATUS": "Running", "IP": "10.244.0.7", "NODE": "<none>"})},
		// A write of the main resource keeps the stored status.
		{name: "status ignored on main resource", args: []string{"-n", "demo", "patch", "pod", "web", "--type=merge", "-p", `{"status":{"phase":"Failed"}}`},
			out: "pod/web patched (no change)"},
		{name: "node status", args: []string{"patch", "node", "node-a", "--subresource=status", "--type=merge", "-p", nodeStatus}, out: "node/node-a patched"},
		{name: "node shows status", args: []string{"get", "nodes", "-o", "wide"},
			check: tableCheck("NAME|STATUS|ROLES|AGE|VERSION|INTERNAL-IP|EXTERNAL-IP|OS-IMAGE|KERNEL-VERSION|CONTAINER-RUNTIME", "node-a",
				map[string]string{"STATUS": "Ready", "VERSION": "v1.36.3", "INTERNAL-IP": "10.0.0.5"})},
		{name: "deployment status", args: []string{"-n", "demo", "patch", "deploy", "web", "--subresource=status", "--type=merge", "-p",
			`{"status":{"replicas":5,"updatedReplicas":5,"readyReplicas":2,"availableReplicas":2}}`}, out: "deployment.apps/web patched"},
		{name: "deployment shows status", args: []string{"-n", "demo", "get", "deploy", "web"},
			check: tableCheck("NAME|READY|UP-TO-DATE|AVAILABLE|AGE", "web", map[string]string{"READY": "2/5", "UP-TO-DATE": "5", "AVAILABLE": "2"})},
		{name: "pod to bind", args: []string{"-n", "demo", "run", "bind-me", "--image=nginx:1.27"}, out: "pod/bind-me created"},
		{name: "bind", args: []string{"create", "--raw", "/api/v1/namespaces/demo/pods/bind-me/binding", "-f", binding},
			out: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}`},
		{name: "bound pod shows its node", args: []string{"-n", "demo", "get", "pod", "bind-me", "-o", "wide"},
			check: tableCheck("NAME|READY|STATUS|RESTARTS|AGE|IP|NODE|NOMINATED NODE|READINESS GATES", "bind-me", map[string]string{"NODE": "node-a"})},
		{name: "bind twice", args: []string{"create", "--raw", "/api/v1/namespaces/demo/pods/bind-me/binding", "-f", binding}, code: 1,
			err: `Error from server (Conflict): Operation cannot be fulfilled on pods/binding "bind-me": pod bind-me is already assigned to node "node-a"`},
	})
}
