// Package layering holds the test that keeps rudder's import graph the
// shape the design says: components talk to each other only through the
// API server, so no component package imports another component's.
//
// Every package of the module is one of four kinds, decided by the one
// table in layering_test.go (the longest matching path wins):
//
//   - a component: one of the parts that run and talk through the API
//     (the API server with its storage, admission, the scheduler, each
//     controller, the kubelet, the runtime, network, proxy, DNS, simulated
//     nodes). It may import its own packages and leaves.
//   - a leaf: pure logic or a client library two components share, named
//     for its concept (quota, cel, cronschedule, serviceendpoints, auth,
//     the controller runner, …). It may import only other leaves.
//   - wiring: what starts components in one process (internal/server,
//     internal/agent, the controllers registry, cmd/rudder, the
//     benchmark driver). It may import anything but test support.
//   - test support (internal/clustertest, controller/controllertest): it
//     stands whole clusters up, so it may import anything, and only tests
//     may import it.
//
// Only the packages' own imports count: a test may import whatever it
// needs to stand a cluster up. A package missing from the table fails the
// test until it is given a kind, so a new package is placed on purpose.
//
// Run it with
//
//	go test ./internal/layering/
package layering
