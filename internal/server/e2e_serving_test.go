package server

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/nodeidentity"
)

// TestServingCertificateEndToEnd: a bootstrapped node asks, as itself,
// for its kubelet serving certificate; the in-process approver and
// signer issue it with no human involved, for the node's own name and
// the addresses its Node lists (the node registers the Node first). It
// is reused while valid and replaced when the node's IP changes. No
// kubelet runs: nothing is dialed.
func TestServingCertificateEndToEnd(t *testing.T) {
	srv, rc := startTestServer(t, Config{Controllers: []string{"csrapproving", "csrsigning"}, DisableScheduler: true})
	admin := kubernetes.NewForConfigOrDie(rc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createTokenSecret(t, admin, "srvtok", "0123456789abcdef", "")
	dir := filepath.Join(t.TempDir(), "agent")
	kubeconfig, err := nodeidentity.Bootstrap(ctx, srv.URL, srv.PKI.CAPEM, "srvtok.0123456789abcdef", "sv-node", dir)
	if err != nil {
		t.Fatal(err)
	}
	nodeCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	node := kubernetes.NewForConfigOrDie(nodeCfg)
	csrCount := func() int {
		l, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}

	ip := net.IPv4(127, 0, 0, 9)
	pair, err := nodeidentity.ServingCertificate(ctx, node, "sv-node", []net.IP{ip}, dir)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	if leaf.Subject.CommonName != "system:node:sv-node" || len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "sv-node" ||
		len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(ip) {
		t.Fatalf("issued %v %v %v", leaf.Subject, leaf.DNSNames, leaf.IPAddresses)
	}
	n, err := admin.CoreV1().Nodes().Get(ctx, "sv-node", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the node registered its Node: %v", err)
	}
	if len(n.Status.Addresses) == 0 || n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.9"}) {
		t.Errorf("node addresses %v", n.Status.Addresses)
	}

	t.Run("reused while valid", func(t *testing.T) {
		before := csrCount()
		again, err := nodeidentity.ServingCertificate(ctx, node, "sv-node", []net.IP{ip}, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Leaf.Equal(leaf) || csrCount() != before {
			t.Error("a valid certificate was replaced")
		}
	})

	t.Run("a new IP gets a new certificate", func(t *testing.T) {
		moved := net.IPv4(127, 0, 0, 10)
		pair, err := nodeidentity.ServingCertificate(ctx, node, "sv-node", []net.IP{moved}, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(pair.Leaf.IPAddresses) != 1 || !pair.Leaf.IPAddresses[0].Equal(moved) {
			t.Errorf("issued for %v", pair.Leaf.IPAddresses)
		}
		if err := nodeidentity.ValidServing(dir, "sv-node", []net.IP{moved}, time.Now()); err != nil {
			t.Errorf("kept in dir: %v", err)
		}
	})
}
