package server

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestExtraListenerAndKubeletDial checks the two hooks `rudder up
// --nodes` wires the hub namespace in with: the API is served on the
// extra listener too, and connections to kubelets go through
// KubeletDial (here one that records the address and refuses).
func TestExtraListenerAndKubeletDial(t *testing.T) {
	extra, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dialed []string
	errRefused := errors.New("test dialer refuses")
	_, rc := startTestServer(t, Config{
		ExtraListener: extra,
		KubeletDial: func(_ context.Context, _, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			return nil, errRefused
		},
	})
	ctx := context.Background()

	t.Run("the API answers on the extra listener", func(t *testing.T) {
		viaExtra := *rc
		viaExtra.Host = "https://" + extra.Addr().String()
		cs := kubernetes.NewForConfigOrDie(&viaExtra)
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			t.Fatalf("GET through %s: %v", viaExtra.Host, err)
		}
	})

	t.Run("kubelet connections go through KubeletDial", func(t *testing.T) {
		cs := kubernetes.NewForConfigOrDie(rc)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hubbed"}}
		node, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.30.0.9"}}
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		body, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/hubbed/proxy/healthz").DoRaw(ctx)
		if err == nil || !strings.Contains(string(body), errRefused.Error()) {
			t.Errorf("node proxy: %v %s; want the test dialer's refusal", err, body)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(dialed) == 0 || dialed[0] != "172.30.0.9:10250" {
			t.Errorf("dialed %v, want 172.30.0.9:10250", dialed)
		}
	})
}

func TestAdvertisedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	extraPort := ln.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name       string
		extra      net.Listener
		advertised net.IP
		want       int
	}{
		{"no extra listener", nil, net.ParseIP("10.0.0.1"), 6443},
		{"nothing advertised", ln, nil, 6443},
		{"the extra listener is on the advertised address", ln, net.ParseIP("127.0.0.1"), extraPort},
		{"the extra listener is elsewhere", ln, net.ParseIP("10.0.0.1"), 6443},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := advertisedPort(tc.extra, tc.advertised, 6443); got != tc.want {
				t.Errorf("advertisedPort = %d, want %d", got, tc.want)
			}
		})
	}
}
