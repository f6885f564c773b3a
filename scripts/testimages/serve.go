package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// registryHosts are the hosts the proxy answers CONNECT for; it refuses
// every other.
var registryHosts = map[string]bool{"registry.k8s.io": true, "k8s.gcr.io": true, "gcr.io": true, "index.docker.io": true}

func serveCommand(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	state := fs.String("state", "", "directory for ca.pem and the proxy file (the address, written once serving)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	_ = fs.Parse(args)
	if *state == "" {
		return errors.New("--state is required")
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("--addr %q: must be a loopback address", *addr)
	}
	ca, err := newCA()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*state, "ca.pem"), ca.certPEM, 0o644); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	p := &proxy{
		registry: registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ca:       ca,
		tlsConns: make(chan net.Conn),
		addr:     l.Addr(),
	}
	plain := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	inner := &http.Server{Handler: p.registry, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = plain.Serve(l) }()
	go func() { _ = inner.Serve(p) }()

	if err := pushAll(l.Addr().String()); err != nil {
		return err
	}
	// The address file appears only once every image is in: callers
	// wait for it.
	tmp := filepath.Join(*state, "proxy.tmp")
	if err := os.WriteFile(tmp, []byte(l.Addr().String()+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(*state, "proxy")); err != nil {
		return err
	}
	fmt.Println(l.Addr().String())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = plain.Shutdown(sctx)
	return nil
}

// pushAll builds the image set and pushes each name into the registry
// behind addr, by its path (registry.k8s.io/pause:3.9 as pause:3.9).
func pushAll(addr string) error {
	b, err := newBuilder()
	if err != nil {
		return err
	}
	for _, s := range imageSet() {
		img, err := b.build(s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.names[0], err)
		}
		for _, n := range s.names {
			ref, err := name.NewTag(n)
			if err != nil {
				return err
			}
			local, err := name.NewTag(addr+"/"+ref.RepositoryStr()+":"+ref.TagStr(), name.Insecure)
			if err != nil {
				return err
			}
			if err := remote.Write(local, img); err != nil {
				return fmt.Errorf("push %s: %w", n, err)
			}
		}
	}
	return nil
}

// proxy is an HTTP proxy that is itself the registry behind every host
// it accepts, and a plain registry for requests that are not CONNECT.
// It is also the net.Listener of the TLS connections it terminates.
type proxy struct {
	registry http.Handler
	ca       *authority
	tlsConns chan net.Conn
	addr     net.Addr
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		p.registry.ServeHTTP(w, r)
		return
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	if !registryHosts[host] {
		http.Error(w, "testimages: only "+strings.Join(hostList(), ", ")+" are served here", http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	tc := tls.Server(&bufferedConn{Conn: conn, r: buf.Reader}, &tls.Config{GetCertificate: p.ca.certFor})
	p.tlsConns <- tc
}

func hostList() []string {
	var hs []string
	for h := range registryHosts {
		hs = append(hs, h)
	}
	return hs
}

func (p *proxy) Accept() (net.Conn, error) { return <-p.tlsConns, nil }
func (p *proxy) Close() error              { return nil }
func (p *proxy) Addr() net.Addr            { return p.addr }

// bufferedConn reads first what the CONNECT request's reader buffered.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// authority is a throwaway CA that issues a certificate per host.
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	mu      sync.Mutex
	issued  map[string]*tls.Certificate
}

func newCA() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "rudder testimages CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(48 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{
		cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		issued:  map[string]*tls.Certificate{},
	}, nil
}

func (a *authority) certFor(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	host := hello.ServerName
	if !registryHosts[host] {
		return nil, fmt.Errorf("no certificate for %q", host)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.issued[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(48 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	a.issued[host] = c
	return c, nil
}

// archiveCommand writes the busybox and pause images as one
// docker-archive tarball, for runtimes fed by import (ctr images import).
func archiveCommand(args []string) error {
	fs := flag.NewFlagSet("archive", flag.ExitOnError)
	out := fs.String("out", "", "tarball to write")
	set := fs.String("set", "critest", "which images: critest (busybox + pause) or conformance (the e2e suite's, see conformance.go)")
	agnhost := fs.String("agnhost", "", "with --set conformance: a static agnhost binary to make the agnhost images from")
	_ = fs.Parse(args)
	if *out == "" {
		return errors.New("--out is required")
	}
	b, err := newBuilder()
	if err != nil {
		return err
	}
	var specs []spec
	switch *set {
	case "critest":
		for _, s := range imageSet()[:6] {
			if s.names[0] == e2e+"busybox:1.29-2" || s.names[0] == "registry.k8s.io/pause:3.9" {
				specs = append(specs, s)
			}
		}
	case "conformance":
		if specs, err = conformanceSet(*agnhost); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--set %q: want critest or conformance", *set)
	}
	refs := map[name.Reference]v1.Image{}
	for _, s := range specs {
		img, err := b.build(s)
		if err != nil {
			return err
		}
		for _, n := range s.names {
			t, err := name.NewTag(n)
			if err != nil {
				return err
			}
			refs[t] = img
		}
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := tarball.MultiRefWrite(refs, f); err != nil {
		f.Close()
		os.Remove(*out)
		return err
	}
	return f.Close()
}
