package bootstrap

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/nodeidentity"
)

func tokenSecret(id string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-" + id}, Type: auth.BootstrapTokenSecretType,
		Data: map[string][]byte{auth.BootstrapTokenIDKey: []byte(id), auth.BootstrapTokenSecretKey: []byte("0123456789abcdef")}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestSignatures(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	soon, later := now.Add(time.Hour), now.Add(2*time.Hour)
	signing := map[string]string{auth.BootstrapTokenUsageSigningKey: "true"}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(signing)
		maps.Copy(m, extra)
		return m
	}
	secrets := []*corev1.Secret{
		tokenSecret("aaaaaa", signing),
		tokenSecret("bbbbbb", with(map[string]string{auth.BootstrapTokenExpirationKey: later.Format(time.RFC3339)})),
		tokenSecret("cccccc", with(map[string]string{auth.BootstrapTokenExpirationKey: soon.Format(time.RFC3339)})),
		tokenSecret("dddddd", with(map[string]string{auth.BootstrapTokenExpirationKey: now.Add(-time.Second).Format(time.RFC3339)})),
		tokenSecret("eeeeee", nil), // not for signing
		tokenSecret("ffffff", with(map[string]string{auth.BootstrapTokenExpirationKey: "soon"})),
	}
	misnamed := tokenSecret("gggggg", signing)
	misnamed.Name = "bootstrap-token-other"
	secrets = append(secrets, misnamed)

	want, next, err := signatures("content", secrets, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(want); got != 3 || want["jws-kubeconfig-aaaaaa"] == "" || want["jws-kubeconfig-bbbbbb"] == "" || want["jws-kubeconfig-cccccc"] == "" {
		t.Fatalf("signatures for %v, want aaaaaa, bbbbbb, cccccc", want)
	}
	if sig, _ := nodeidentity.SignClusterInfo("content", "aaaaaa", "0123456789abcdef"); want["jws-kubeconfig-aaaaaa"] != sig {
		t.Error("signature differs from nodeidentity's")
	}
	if !next.Equal(soon) {
		t.Errorf("next expiration %v, want %v", next, soon)
	}

	t.Run("stale signatures go, other keys stay", func(t *testing.T) {
		data := map[string]string{nodeidentity.ClusterInfoKubeconfigKey: "content", "jws-kubeconfig-zzzzzz": "old", "jws-kubeconfig-aaaaaa": want["jws-kubeconfig-aaaaaa"]}
		out, changed := withSignatures(data, want)
		if !changed || out["jws-kubeconfig-zzzzzz"] != "" || out[nodeidentity.ClusterInfoKubeconfigKey] != "content" || len(out) != 4 {
			t.Fatalf("got %v changed=%v", out, changed)
		}
		if _, again := withSignatures(out, want); again {
			t.Error("a signed ConfigMap is changed again")
		}
	})
}
