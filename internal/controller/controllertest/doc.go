// Package controllertest runs controllers against a real API server in
// tests, the way net/http/httptest runs handlers against a real HTTP
// stack. It pairs with internal/clustertest, which starts the server:
// clustertest gives the cluster, controllertest puts the controller under
// test (and the few things it needs around it) to work on it.
//
// # Running a controller
//
// Run builds controllers from their Descriptors, with the clients, shared
// informers and event recorders controller.NewContext makes for the
// manager, starts the informers, waits for them to sync and runs every
// Runnable until the test ends:
//
//	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
//	controllertest.Run(t, c.Config, podgc.Descriptor)
//
// Run returns a stop function for tests that restart a controller (a new
// process has no in-memory state, so that is how a test proves the
// controller recovers from what it left half done); calling it is
// optional, as the test's cleanup stops everything Run started.
//
// NewContext and RunContext split Run in two for a test that changes the
// Context before the controller is built, typically to give it a fake
// clock:
//
//	cx := controllertest.NewContext(t, c.Config)
//	cx.Clock = testclock.NewFakeClock(start)
//	controllertest.RunContext(t, cx, cronjob.Descriptor)
//
// RunManager instead runs descriptors through controller.RunManager, as
// the controller manager process does: each controller waits only for
// its own informers and a failing one is restarted. It is the choice for
// tests of several controllers together or of a controller acting with
// reduced credentials (rest.Config.Impersonate).
//
// # Standing in for the scheduler
//
// clustertest runs no scheduler unless asked, and simulated nodes run
// only pods bound to them. StartBinder binds every pending pod to the
// Ready nodes in turn (or to the node its required node affinity names,
// as DaemonSet pods ask), so tests of workload controllers see their
// pods run without depending on the real scheduler's decisions.
//
// # Watching and waiting
//
// Controllers act asynchronously, so tests assert on what eventually
// holds: Eventually polls a condition until it is true, Consistently
// checks that one stays true for a while (that a controller did not do
// something it must not). Both take a condition that returns a message
// saying what it saw, which becomes the failure message.
//
// WatchPods records what happens to a namespace's pods while a test
// runs, in watch order ("web-0 created", "web-0 ready", "web-1
// created", ...), and the most pods ever active at once: what a
// controller did along the way, not only where it ended up.
//
// # Fixtures
//
// CreateNamespace, CreatePod and CreateService create objects or fail the
// test. WebService and WebPod are a Service and the pods behind it, for
// controllers that follow Services; HoldDeletion, NeverReady and
// SetPodReady put a pod in the states a kubelet would (terminating, not
// ready, ready again). Kubectl and KubectlOutput run the real kubectl
// against the cluster, to check what users see.
package controllertest
