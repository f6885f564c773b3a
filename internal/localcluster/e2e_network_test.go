package localcluster_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/kubectltest"
)

// checkClusterNetwork is the networking part of TestUpNodes, with real
// packets between the nodes' pods: pod to pod across nodes, a Service's
// virtual IP reached by its DNS name and spreading over endpoints on
// both nodes, a NodePort on every node, and a LoadBalancer's ingress.
// client is a running busybox pod on node-1.
func checkClusterNetwork(t *testing.T, k *kubectltest.Kubectl, client string, nodeIPs []string) {
	// busybox httpd answering with its pod's name.
	k.OK(t, "create", "deployment", "web", "--image=busybox:local", "--replicas=4", "--port=8080",
		"--", "sh", "-c", "mkdir -p /w && hostname > /w/index.html && exec httpd -f -p 8080 -h /w")
	k.OK(t, "expose", "deployment", "web", "--port=80", "--target-port=8080")
	k.OK(t, "expose", "deployment", "web", "--name=web-np", "--type=NodePort", "--port=80", "--target-port=8080")
	var pods corev1.PodList
	waitFor(t, 60*time.Second, "4 web pods Ready on both nodes", func() bool {
		r := k.Run(t, "", "get", "pods", "-l", "app=web", "-o", "json")
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &pods) != nil || len(pods.Items) != 4 {
			return false
		}
		onNode := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.PodIP == "" || !podReady(&p) {
				return false
			}
			onNode[p.Spec.NodeName] = true
		}
		return len(onNode) == 2
	})
	// fetch runs wget in the client pod; busybox's timeout bounds it
	// (its wget -T crashes on this Debian build).
	fetch := func(url string) (string, error) {
		r := k.Run(t, "", "exec", client, "--", "timeout", "5", "wget", "-qO-", url)
		if r.Code != 0 {
			return "", fmt.Errorf("wget %s: exit %d: %s", url, r.Code, r.Stderr)
		}
		return strings.TrimSpace(r.Stdout), nil
	}
	names := map[string]bool{}
	for _, p := range pods.Items {
		names[p.Name] = true
	}

	t.Run("pod to pod across nodes", func(t *testing.T) {
		for _, p := range pods.Items {
			if p.Spec.NodeName == "node-1" {
				continue
			}
			got, err := fetch("http://" + p.Status.PodIP + ":8080/")
			if err != nil || got != p.Name {
				t.Errorf("node-1 → %s on %s at %s: %q, %v", p.Name, p.Spec.NodeName, p.Status.PodIP, got, err)
			}
		}
	})
	t.Run("a Service by its DNS name spreads over its endpoints", func(t *testing.T) {
		seen := map[string]int{}
		for range 16 {
			got, err := fetch("http://web.default.svc.cluster.local/")
			if err != nil {
				t.Fatal(err)
			}
			if !names[got] {
				t.Fatalf("the service answered %q, not one of its pods", got)
			}
			seen[got]++
		}
		if len(seen) < 2 {
			t.Errorf("16 requests reached only %v", seen)
		}
		// busybox's nslookup walks every search domain and exits 1 on the
		// NXDOMAINs of the others; the answer for the name is what counts.
		r := k.Run(t, "", "exec", client, "--", "nslookup", "web")
		ip := k.OK(t, "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
		if !strings.Contains(r.Stdout, "Name:\tweb.default.svc.cluster.local\nAddress: "+ip+"\n") {
			t.Errorf("nslookup web: %q; want web.default.svc.cluster.local at %s", r.Stdout, ip)
		}
	})
	t.Run("pods/proxy and services/proxy reach pods on both nodes", func(t *testing.T) {
		for _, p := range pods.Items {
			var got string
			// The API server's routes to a node's pods follow its Node.
			waitFor(t, 10*time.Second, "pods/proxy to "+p.Name, func() bool {
				r := k.Run(t, "", "get", "--raw", "/api/v1/namespaces/default/pods/"+p.Name+":8080/proxy/")
				got = strings.TrimSpace(r.Stdout)
				return r.Code == 0
			})
			if got != p.Name {
				t.Errorf("pods/proxy of %s on %s answered %q", p.Name, p.Spec.NodeName, got)
			}
		}
		got := strings.TrimSpace(k.OK(t, "get", "--raw", "/api/v1/namespaces/default/services/web:80/proxy/"))
		if !names[got] {
			t.Errorf("services/proxy of web answered %q", got)
		}
	})
	t.Run("a NodePort answers on every node", func(t *testing.T) {
		port := k.OK(t, "get", "service", "web-np", "-o", "jsonpath={.spec.ports[0].nodePort}")
		for _, ip := range nodeIPs {
			var got string
			var err error
			// The proxies sync within moments of the Service.
			waitFor(t, 10*time.Second, "NodePort on "+ip, func() bool {
				got, err = fetch("http://" + ip + ":" + port + "/")
				return err == nil
			})
			if !names[got] {
				t.Errorf("NodePort %s:%s answered %q", ip, port, got)
			}
		}
	})
	t.Run("NetworkPolicy: deny-all stops the Service, an allow restores it", func(t *testing.T) {
		const denyAll = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all}
spec: {podSelector: {}, policyTypes: [Ingress]}
`
		const allowWeb = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-web}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{podSelector: {}}]
    ports: [{port: 8080}]
`
		url := "http://web.default.svc.cluster.local/"
		if r := k.Run(t, denyAll, "apply", "-f", "-"); r.Code != 0 {
			t.Fatalf("apply deny-all: %s", r.Stderr)
		}
		t.Cleanup(func() { k.Run(t, "", "delete", "networkpolicy", "deny-all", "allow-web", "--ignore-not-found") })
		// Every node's enforcer syncs within a second; a request in
		// flight may still complete, so wait for the first refusal and
		// then require every endpoint to be refused.
		waitFor(t, 15*time.Second, "the service refused under deny-all", func() bool {
			_, err := fetch(url)
			return err != nil
		})
		for range 2 {
			if got, err := fetch(url); err == nil {
				t.Fatalf("deny-all: the service still answered %q", got)
			}
		}
		if r := k.Run(t, allowWeb, "apply", "-f", "-"); r.Code != 0 {
			t.Fatalf("apply allow-web: %s", r.Stderr)
		}
		seen := map[string]bool{}
		waitFor(t, 15*time.Second, "the service answering again from both nodes' pods", func() bool {
			got, err := fetch(url)
			if err != nil {
				return false
			}
			seen[got] = true
			return len(seen) >= 2
		})
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
