package nodeidentity

import "testing"

// TestDetachedJWS checks the signature against kubeadm's own test
// vectors (k8s.io/cluster-bootstrap/token/jws), so that kubeadm-made
// signatures verify here and ours verify with kubeadm.
func TestDetachedJWS(t *testing.T) {
	const content = "Hello from the other side. I must have called a thousand times."
	for _, tc := range []struct{ content, secret, want string }{
		{content, "my voice is my passcode", "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"},
		{"", "my voice is my passcode", "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk"},
	} {
		got, err := detachedJWS(tc.content, "joshua", tc.secret)
		if err != nil || got != tc.want {
			t.Errorf("detachedJWS(%q) = %q, %v; want %q", tc.content, got, err, tc.want)
		}
	}
	if _, err := SignClusterInfo(content, "joshua", "my voice is my passcode"); err == nil {
		t.Error("SignClusterInfo accepted something that is not a bootstrap token")
	}
}
