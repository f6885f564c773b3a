package registry

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// coreAgo returns a timestamp d before now; ages render as whole units, so a
// test finishing within a second renders the same every time.
func coreAgo(d time.Duration) metav1.Time {
	return metav1.NewTime(time.Now().Add(-d))
}

func coreObjMeta(name string, age time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: coreAgo(age)}
}

func coreRunning(name string, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func coreWaiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func corePod(name string, mutate func(*corev1.Pod)) runtime.Object {
	p := &corev1.Pod{ObjectMeta: coreObjMeta(name, 5*time.Minute),
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	mutate(p)
	return p
}

func coreScheduled(p *corev1.Pod) {
	p.Spec.NodeName = "node-1"
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.7"}}
}

func coreTableCases() map[string][]runtime.Object {
	always := corev1.ContainerRestartPolicyAlways
	crashed := coreRunning("app", false, 3)
	crashed.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	crashed.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: coreAgo(2 * time.Minute)}}
	return map[string][]runtime.Object{
		"pods": {
			corePod("pending", func(p *corev1.Pod) {}),
			corePod("creating", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Status.PodIPs = nil
				p.Status.ContainerStatuses = []corev1.ContainerStatus{coreWaiting("app", "ContainerCreating")}
			}),
			corePod("running", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{coreRunning("app", true, 0)}
			}),
			corePod("crashing", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{crashed}
			}),
			corePod("initializing", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{coreRunning("init", false, 0)}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{coreWaiting("app", "PodInitializing")}
			}),
			corePod("init-failing", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{coreWaiting("init", "CrashLoopBackOff")}
			}),
			corePod("with-sidecar", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Status.Phase = corev1.PodRunning
				started := true
				p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
				side := coreRunning("proxy", true, 1)
				side.Started = &started
				side.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: coreAgo(3 * time.Hour)}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{side}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{coreRunning("app", true, 0)}
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}
			}),
			corePod("completed", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
			}),
			corePod("oom", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}
			}),
			corePod("terminating", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Status.Phase = corev1.PodRunning
				p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{coreRunning("app", true, 0)}
			}),
			corePod("node-lost", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Status.Phase = corev1.PodRunning
				p.Status.Reason = "NodeLost"
				p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}),
			corePod("gated", func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
			}),
			corePod("gates", func(p *corev1.Pod) {
				coreScheduled(p)
				p.Status.Phase = corev1.PodRunning
				p.Status.NominatedNodeName = "node-2"
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/a"}, {ConditionType: "example.com/b"}}
				p.Status.Conditions = []corev1.PodCondition{{Type: "example.com/a", Status: corev1.ConditionTrue}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{coreRunning("app", true, 0)}
			}),
		},
		"services": {
			&corev1.Service{ObjectMeta: coreObjMeta("kubernetes", 48*time.Hour), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
				ClusterIPs: []string{"10.96.0.1"}, Ports: []corev1.ServicePort{{Port: 443, Protocol: "TCP"}}}},
			&corev1.Service{ObjectMeta: coreObjMeta("web", time.Hour), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
				ClusterIPs: []string{"10.96.12.3"}, Selector: map[string]string{"app": "web", "tier": "front"},
				Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: "TCP"}, {Port: 53, NodePort: 30053, Protocol: "UDP"}}}},
			&corev1.Service{ObjectMeta: coreObjMeta("lb-pending", time.Minute), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
				ClusterIPs: []string{"10.96.7.7"}, Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000, Protocol: "TCP"}}}},
			&corev1.Service{ObjectMeta: coreObjMeta("lb", time.Minute), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
				ClusterIPs: []string{"10.96.7.8"}, Ports: []corev1.ServicePort{{Port: 80, NodePort: 31001, Protocol: "TCP"}}},
				Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.10"}}}}},
			&corev1.Service{ObjectMeta: coreObjMeta("db", 10*time.Second), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName,
				ExternalName: "db.example.com"}},
			&corev1.Service{ObjectMeta: coreObjMeta("headless", 3*24*time.Hour), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
				ClusterIPs: []string{"None"}}},
		},
		"nodes": {
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp-1", CreationTimestamp: coreAgo(10 * 24 * time.Hour),
				Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
					Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}},
					NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.0", OSImage: "Debian GNU/Linux 12 (bookworm)",
						KernelVersion: "6.1.0-21-amd64", ContainerRuntimeVersion: "rudder://0.1.0"}}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", CreationTimestamp: coreAgo(2 * time.Hour),
				Labels: map[string]string{"kubernetes.io/role": "worker", "node-role.kubernetes.io/gpu": ""}},
				Spec: corev1.NodeSpec{Unschedulable: true},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}},
					Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.1.11"}, {Type: corev1.NodeExternalIP, Address: "198.51.100.11"}},
					NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.36.0"}}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "new", CreationTimestamp: coreAgo(30 * time.Second)}},
		},
		"namespaces": {
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", CreationTimestamp: coreAgo(48 * time.Hour)},
				Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "old", CreationTimestamp: coreAgo(90 * time.Minute)},
				Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		},
		"configmaps": {
			&corev1.ConfigMap{ObjectMeta: coreObjMeta("kube-root-ca.crt", 48*time.Hour), Data: map[string]string{"ca.crt": "..."}},
			&corev1.ConfigMap{ObjectMeta: coreObjMeta("mixed", time.Minute), Data: map[string]string{"a": "1", "b": "2"},
				BinaryData: map[string][]byte{"c": {0}}},
		},
		"secrets": {
			&corev1.Secret{ObjectMeta: coreObjMeta("creds", time.Hour), Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"user": nil, "password": nil}},
			&corev1.Secret{ObjectMeta: coreObjMeta("tls", time.Hour), Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
		},
		"serviceaccounts": {
			&corev1.ServiceAccount{ObjectMeta: coreObjMeta("default", 48*time.Hour)},
			&corev1.ServiceAccount{ObjectMeta: coreObjMeta("builder", time.Hour), Secrets: []corev1.ObjectReference{{Name: "builder-token"}}},
		},
		"endpoints": {
			&corev1.Endpoints{ObjectMeta: coreObjMeta("empty", time.Hour)},
			&corev1.Endpoints{ObjectMeta: coreObjMeta("web", time.Hour), Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.244.1.7"}, {IP: "fd00::7"}},
				Ports:     []corev1.EndpointPort{{Port: 80}}}}},
			&corev1.Endpoints{ObjectMeta: coreObjMeta("many", time.Hour), Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}, {IP: "10.0.0.3"}},
				Ports:     []corev1.EndpointPort{{Port: 80}, {Port: 443}}}}},
			&corev1.Endpoints{ObjectMeta: coreObjMeta("headless", time.Hour), Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.0.0.9"}}}}},
		},
		"events": {
			&corev1.Event{ObjectMeta: coreObjMeta("web.17a", time.Hour), Type: corev1.EventTypeNormal, Reason: "Scheduled",
				Message: "Successfully assigned default/web to node-1\n", InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web"},
				Source: corev1.EventSource{Component: "default-scheduler"}, FirstTimestamp: coreAgo(time.Hour), LastTimestamp: coreAgo(2 * time.Minute), Count: 4},
			&corev1.Event{ObjectMeta: coreObjMeta("web.17b", time.Minute), Type: corev1.EventTypeWarning, Reason: "BackOff",
				Message: "Back-off restarting failed container", InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", FieldPath: "spec.containers{app}"},
				ReportingController: "kubelet", ReportingInstance: "node-1", EventTime: metav1.NewMicroTime(time.Now().Add(-10 * time.Minute)),
				Series: &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(time.Now().Add(-30 * time.Second))}},
			&corev1.Event{ObjectMeta: coreObjMeta("node.1", time.Minute), Type: corev1.EventTypeNormal, Reason: "Starting",
				InvolvedObject: corev1.ObjectReference{Kind: "Node"}, EventTime: metav1.NewMicroTime(time.Now().Add(-5 * time.Second)),
				ReportingController: "kubelet"},
		},
	}
}

// renderCoreTable lays a table out as kubectl -o wide would, with "|" between
// cells and "*" after wide-only column names.
func renderCoreTable(t *testing.T, tbl *Table, objs []runtime.Object) string {
	var b bytes.Buffer
	names := make([]string, len(tbl.Columns))
	for i, c := range tbl.Columns {
		names[i] = strings.ToUpper(c.Name)
		if c.Priority > 0 {
			names[i] += "*"
		}
	}
	b.WriteString(strings.Join(names, " | ") + "\n")
	for _, obj := range objs {
		cells := tbl.Row(obj)
		if len(cells) != len(tbl.Columns) {
			t.Errorf("%T: %d cells for %d columns", obj, len(cells), len(tbl.Columns))
		}
		out := make([]string, len(cells))
		for i, c := range cells {
			switch c.(type) {
			case string, int64, bool, float64:
			default:
				t.Errorf("%T: cell %d has type %T", obj, i, c)
			}
			out[i] = fmt.Sprint(c)
		}
		b.WriteString(strings.Join(out, " | ") + "\n")
	}
	return b.String()
}

func TestCoreTables(t *testing.T) {
	cases := coreTableCases()
	var all bytes.Buffer
	for _, r := range coreResources() {
		t.Run(r.Resource, func(t *testing.T) {
			if r.Table == nil {
				t.Fatalf("no table")
			}
			if r.Resource != "events" && r.Table.Columns[0].Name != "Name" {
				t.Errorf("first column is %q", r.Table.Columns[0].Name)
			}
			objs := cases[r.Resource]
			if len(objs) == 0 && coreMoreTable(r.Resource) {
				t.Skip("rendered by TestCoreMoreTables")
			}
			if r.Resource == "componentstatuses" {
				t.Skip("rendered by TestNewGroupsTables")
			}
			if len(objs) == 0 {
				t.Fatalf("no table cases")
			}
			fmt.Fprintf(&all, "== %s\n%s\n", r.Resource, renderCoreTable(t, r.Table, objs))
		})
	}
	golden := filepath.Join("testdata", "core_tables.golden")
	if updateGolden() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, all.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got := all.String(); got != string(want) {
		t.Errorf("tables differ from %s (run with -update to accept):\n%s", golden, lineDiff(string(want), got))
	}
}
