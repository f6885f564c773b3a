package server

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/nodeidentity"
)

// TestNodeIdentityEndToEnd joins a node the way `rudder agent --token`
// will: a bootstrap token Secret, a CSR approved and signed by the
// in-process controllers, then the node's own certificate — confined by
// the Node authorizer and NodeRestriction to its own objects.
func TestNodeIdentityEndToEnd(t *testing.T) {
	srv, rc := startTestServer(t, Config{Controllers: []string{"csrapproving", "csrsigning", "bootstrapsigner", "tokencleaner"}, DisableScheduler: true})
	admin := kubernetes.NewForConfigOrDie(rc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const token = "abcdef.0123456789abcdef"
	createTokenSecret(t, admin, "abcdef", "0123456789abcdef", "")

	dir := filepath.Join(t.TempDir(), "agent")
	start := time.Now()
	kubeconfig, err := nodeidentity.Bootstrap(ctx, srv.URL, srv.PKI.CAPEM, token, "node-1", dir)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	t.Logf("bootstrap took %v", time.Since(start).Round(time.Millisecond))
	for _, f := range []string{nodeidentity.KubeconfigFile, nodeidentity.CertFile, nodeidentity.KeyFile, nodeidentity.CAFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	nodeCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	node := kubernetes.NewForConfigOrDie(nodeCfg)

	t.Run("the node is system:node:node-1", func(t *testing.T) {
		rev, err := node.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u := rev.Status.UserInfo; u.Username != "system:node:node-1" || !slices.Contains(u.Groups, "system:nodes") {
			t.Fatalf("user %q %v", u.Username, u.Groups)
		}
	})

	t.Run("a second bootstrap reuses the certificate without a token", func(t *testing.T) {
		again, err := nodeidentity.Bootstrap(ctx, srv.URL, srv.PKI.CAPEM, "", "node-1", dir)
		if err != nil || again != kubeconfig {
			t.Fatalf("got %q, %v", again, err)
		}
	})

	t.Run("registers its Node and reports status", func(t *testing.T) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelHostname: "node-1"}}}
		created, err := node.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if _, err := node.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("renews its Lease", func(t *testing.T) {
		holder, secs := "node-1", int32(40)
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
		l, err := node.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		if _, err := node.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		other := lease.DeepCopy()
		other.Name = "node-2"
		_, err = node.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, other, metav1.CreateOptions{})
		wantForbidden(t, err, "can only access node lease with the same name as the requesting node")
	})

	// The admin binds a pod to node-1 that reads one secret, and another
	// pod to node-2 that reads another.
	for _, name := range []string{"mine", "theirs", "nobodys"} {
		if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podOn := func(name, nodeName, secret string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
		}}
		created, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	mine := podOn("on-node-1", "node-1", "mine")
	theirs := podOn("on-node-2", "node-2", "theirs")

	t.Run("reads the secret of its pod", func(t *testing.T) {
		// The graph follows pods by watch: allow it a moment to see the pod.
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := node.CoreV1().Secrets("default").Get(ctx, "mine", metav1.GetOptions{})
			if err == nil {
				return
			}
			if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
				t.Fatalf("get secret of its own pod: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("is refused other secrets", func(t *testing.T) {
		for _, name := range []string{"theirs", "nobodys"} {
			_, err := node.CoreV1().Secrets("default").Get(ctx, name, metav1.GetOptions{})
			wantForbidden(t, err, "no relationship found between node 'node-1' and this object")
		}
		_, err := node.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		wantForbidden(t, err, "can only read namespaced object of this type")
	})

	t.Run("loses the secret when its pod goes", func(t *testing.T) {
		if err := admin.CoreV1().Pods("default").Delete(ctx, mine.Name, *metav1.NewDeleteOptions(0)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := node.CoreV1().Secrets("default").Get(ctx, "mine", metav1.GetOptions{})
			if apierrors.IsForbidden(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("secret still readable after its pod was deleted: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		mine = podOn("on-node-1-again", "node-1", "mine")
	})

	t.Run("gains a secret when a pending pod is bound to it", func(t *testing.T) {
		if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pending := podOn("pending", "", "later")
		_, err := node.CoreV1().Secrets("default").Get(ctx, "later", metav1.GetOptions{})
		wantForbidden(t, err, "no relationship found")
		if err := admin.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pending.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := node.CoreV1().Secrets("default").Get(ctx, "later", metav1.GetOptions{})
			if err == nil {
				break
			}
			if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
				t.Fatalf("after binding: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("writes only its own pods' status", func(t *testing.T) {
		mine.Status.Phase = corev1.PodRunning
		if _, err := node.CoreV1().Pods("default").UpdateStatus(ctx, mine, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		theirs.Status.Phase = corev1.PodRunning
		_, err := node.CoreV1().Pods("default").UpdateStatus(ctx, theirs, metav1.UpdateOptions{})
		wantForbidden(t, err, `node "node-1" can only update pod status for pods with spec.nodeName set to itself`)
		err = node.CoreV1().Pods("default").Delete(ctx, theirs.Name, metav1.DeleteOptions{})
		wantForbidden(t, err, `node "node-1" can only delete pods with spec.nodeName set to itself`)
	})

	t.Run("may not modify another Node", func(t *testing.T) {
		n2, err := node.CoreV1().Nodes().Get(ctx, "node-2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n2.Labels = map[string]string{"stolen": "yes"}
		_, err = node.CoreV1().Nodes().Update(ctx, n2, metav1.UpdateOptions{})
		wantForbidden(t, err, `node "node-1" is not allowed to modify node "node-2"`)
	})

	t.Run("may not give itself cluster labels", func(t *testing.T) {
		n1, err := node.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n1.Labels["node-restriction.kubernetes.io/trusted"] = "true"
		_, err = node.CoreV1().Nodes().Update(ctx, n1, metav1.UpdateOptions{})
		wantForbidden(t, err, "is not allowed to modify labels: node-restriction.kubernetes.io/trusted")
	})

	t.Run("bad tokens are 401", func(t *testing.T) {
		createTokenSecret(t, admin, "expird", "0123456789abcdef", time.Now().Add(-time.Minute).Format(time.RFC3339))
		for name, tok := range map[string]string{
			"expired":      "expird.0123456789abcdef",
			"wrong secret": "abcdef.0123456789abcdee",
			"unknown id":   "zzzzzz.0123456789abcdef",
		} {
			c := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, BearerToken: tok, TLSClientConfig: rest.TLSClientConfig{CAData: srv.PKI.CAPEM}})
			_, err := c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if !apierrors.IsUnauthorized(err) {
				t.Errorf("%s: %v, want 401", name, err)
			}
		}
		_, err := nodeidentity.Bootstrap(ctx, srv.URL, srv.PKI.CAPEM, "expird.0123456789abcdef", "node-3", t.TempDir())
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("bootstrap with an expired token: %v, want 401", err)
		}
	})

	t.Run("joins with the token alone, the CA discovered and checked", func(t *testing.T) {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		kc, err := nodeidentity.Bootstrap(ctx, srv.URL, nil, token, "node-4", dir)
		if err != nil {
			t.Fatal(err)
		}
		if ca, _ := os.ReadFile(filepath.Join(dir, nodeidentity.CAFile)); string(ca) != string(srv.PKI.CAPEM) {
			t.Fatal("the discovered CA is not the cluster's")
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-4"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a token that does not sign cluster-info discovers nothing", func(t *testing.T) {
		// Created without usage-bootstrap-signing from the start: never
		// signed, not even for a moment.
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: auth.BootstrapTokenSecretPrefix + "nosign", Namespace: auth.BootstrapTokenNamespace},
			Type:       auth.BootstrapTokenSecretType,
			StringData: map[string]string{auth.BootstrapTokenIDKey: "nosign", auth.BootstrapTokenSecretKey: "0123456789abcdef", auth.BootstrapTokenUsageAuthKey: "true"},
		}
		if _, err := admin.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		_, err := nodeidentity.Bootstrap(ctx, srv.URL, nil, "nosign.0123456789abcdef", "node-5", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), `no signature for token ID "nosign"`) {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("anyone may read cluster-info, and nothing else", func(t *testing.T) {
		anon := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: srv.PKI.CAPEM}})
		cm, err := anon.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cm.Data["jws-kubeconfig-abcdef"]; !ok {
			t.Errorf("cluster-info is not signed for abcdef: keys %v", slices.Sorted(maps.Keys(cm.Data)))
		}
		if _, ok := cm.Data["jws-kubeconfig-nosign"]; ok {
			t.Error("cluster-info is signed for a token without usage-bootstrap-signing")
		}
		if _, err := anon.CoreV1().ConfigMaps("kube-public").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
			t.Errorf("anonymous list: %v, want 401", err)
		}
	})

	t.Run("expired tokens are deleted", func(t *testing.T) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-expird", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("expired token still there: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("a bootstrap token can do nothing but ask for a certificate", func(t *testing.T) {
		c := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: srv.PKI.CAPEM}})
		_, err := c.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		wantForbidden(t, err, `User "system:bootstrap:abcdef" cannot list resource "secrets"`)
		_, err = c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-9"}}, metav1.CreateOptions{})
		wantForbidden(t, err, `cannot create resource "nodes"`)
	})
}

func createTokenSecret(t *testing.T, c kubernetes.Interface, id, secret, expiration string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: auth.BootstrapTokenSecretPrefix + id, Namespace: auth.BootstrapTokenNamespace},
		Type:       auth.BootstrapTokenSecretType,
		StringData: map[string]string{
			auth.BootstrapTokenIDKey:           id,
			auth.BootstrapTokenSecretKey:       secret,
			auth.BootstrapTokenUsageAuthKey:    "true",
			auth.BootstrapTokenUsageSigningKey: "true",
			auth.BootstrapTokenExtraGroupsKey:  auth.BootstrapDefaultNodeGroup,
		},
	}
	if expiration != "" {
		s.StringData[auth.BootstrapTokenExpirationKey] = expiration
	}
	if _, err := c.CoreV1().Secrets(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func wantForbidden(t *testing.T, err error, substr string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), substr) {
		t.Errorf("got %v, want 403 containing %q", err, substr)
	}
}

func TestNodeRestrictionOnByDefault(t *testing.T) {
	tests := []struct {
		name            string
		enable, disable []string
		want            bool
	}{
		{name: "default", want: true},
		{name: "enabled by name too", enable: []string{"NodeRestriction"}, want: true},
		{name: "disabled", disable: []string{"NodeRestriction"}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			names, err := admissionPluginNames(Config{EnableAdmissionPlugins: tc.enable, DisableAdmissionPlugins: tc.disable})
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(names, "NodeRestriction"); got != tc.want {
				t.Fatalf("NodeRestriction in %v = %v, want %v", names, got, tc.want)
			}
		})
	}
}
