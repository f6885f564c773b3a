package netpolicy

import (
	"os"
	"testing"
)

// For the kernel tests in package netpolicy_test (which start an API
// server, whose package imports this one).
type TestNetNS = netNS

// RequireRoot skips tests that need namespaces and nftables.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and nftables tables")
	}
}

// TempNetNS is a namespace pinned in dir, gone when the test ends.
func TempNetNS(t testing.TB, dir, name string) *netNS {
	t.Helper()
	ns, err := newNetNS(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}
