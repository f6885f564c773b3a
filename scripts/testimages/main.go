// Command testimages makes the container images that critest and the
// CRI benchmarks need, on a machine that reaches no registry on the
// internet, from the host's static /bin/busybox and from this program's
// own (static) binary.
//
//	testimages serve --state DIR     # serve them; DIR/proxy holds the address, DIR/ca.pem the CA
//	testimages archive --out FILE    # write busybox + pause as one docker-archive tarball
//	testimages archive --set conformance --agnhost BIN --out FILE  # the e2e suite's images (conformance.go)
//
// # Serving under the names critest uses
//
// critest asks for images by their real names (registry.k8s.io/pause:3.9,
// gcr.io/k8s-staging-cri-tools/test-image-tag:test, …) and checks that
// the runtime reports those names back, so a loopback registry under
// another name cannot stand in. serve therefore runs an HTTP proxy on
// 127.0.0.1 that answers CONNECT for those registry hosts itself: it
// terminates TLS with a certificate for the host, issued by a CA of its
// own (written to DIR/ca.pem), and serves an in-memory registry
// (go-containerregistry's pkg/registry). A runtime started with
// HTTPS_PROXY=http://ADDR and SSL_CERT_FILE=DIR/ca.pem pulls through its
// ordinary HTTPS code; no byte leaves the machine, and a CONNECT to any
// other host is refused. Plain requests to ADDR reach the same registry,
// so ADDR also works as an insecure loopback registry (ADDR/e2e-test-images/busybox:1.29-2).
//
// # The programs inside the images
//
// The web servers (nginx, httpd, hostnet-nginx), the setuid program of
// the nonewprivs image and the pause program are this binary, copied
// into the image and chosen by the name it runs as (os.Args[0]); it must
// be built with CGO_ENABLED=0 so it runs in an image with no libc.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if run, ok := personalities[filepath.Base(os.Args[0])]; ok {
		os.Exit(run())
	}
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serveCommand(os.Args[2:])
	case "archive":
		err = archiveCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testimages:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testimages serve --state DIR | testimages archive [--set critest|conformance] [--agnhost BIN] --out FILE")
	os.Exit(2)
}
