package netpolicy

import (
	"os"
	"testing"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/rudder-dev/rudder/internal/netns"
)

// For the kernel tests in package netpolicy_test (which start an API
// server, whose package imports this one).
type TestNetNS = netns.NS

// RequireRoot skips tests that need namespaces and nftables.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and nftables tables")
	}
}

// TempNetNS is a namespace pinned in dir, gone when the test ends.
func TempNetNS(t testing.TB, dir, name string) *netns.NS {
	t.Helper()
	ns, err := netns.Pinned(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// TableObjects counts the chains and sets in the table.
func TableObjects(nsPath, table string) (chains, sets int, err error) {
	fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(fd)
	c, err := newConn(fd)
	if err != nil {
		return 0, 0, err
	}
	all, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return 0, 0, err
	}
	for _, ch := range all {
		if ch.Table.Name == table {
			chains++
		}
	}
	ss, err := c.GetSets(&nftables.Table{Name: table, Family: nftables.TableFamilyINet})
	return chains, len(ss), err
}
