// Package imagetest builds small, real container images for tests: a
// busybox image made from the host's static /bin/busybox, layers from a
// list of tar entries, docker-archive and OCI-layout tarballs of them, and
// an in-memory registry (go-containerregistry's pkg/registry) served on a
// loopback port for pulls.
//
// It is an ordinary package so that the tests of other packages (the CRI
// server, the kubelet's end-to-end tests) can use it; only tests import it.
//
// Usage:
//
//	img := imagetest.Busybox(t)               // skips without /bin/busybox
//	host := imagetest.Registry(t)             // "127.0.0.1:41234", closed at cleanup
//	digest := imagetest.Push(t, host, "busybox:1", img)
//	imagetest.WriteDockerArchive(t, tarPath, "busybox:1", img)
//
// Every helper fails the test (t.Fatal) on error, so callers need no error
// handling.
package imagetest
