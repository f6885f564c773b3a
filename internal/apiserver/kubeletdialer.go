package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	proxyutil "k8s.io/apimachinery/pkg/util/proxy"
)

// The kubelet dialer: how the API server reaches a node's kubelet, for
// pods/log, exec, nodes/proxy (the NodeConnector) and for the resource
// metrics behind kubectl top (resourcemetrics.go). It dials the node's
// InternalIP at status.daemonEndpoints.kubeletEndpoint.port over HTTPS,
// presenting the API server's kubelet client certificate and checking
// that the kubelet's certificate chains to the cluster CA (its names are
// not checked: simulated nodes share one certificate; upstream without
// --kubelet-certificate-authority checks nothing at all).
//
// Which addresses are dialed: a real node's kubelet at its InternalIP,
// whatever it is, as upstream does. A simulated node (label
// simnode.rudder.dev/simulated) serves on loopback, so its kubelet is
// dialed only at a loopback address: a simulated Node object claiming
// another address is never a reason to send traffic off the machine. A
// node advertising port 0 is answered "does not serve the kubelet API"
// without any dial. The socket dials only the address kubeletAddress
// chose for the request (carried in its context), so a redirect or a
// URL naming another host is refused at the socket too.

// KubeletClientConfig is how the API server authenticates to kubelets and
// verifies them.
type KubeletClientConfig struct {
	// Cert is the API server's client certificate (issued by the cluster
	// CA, which kubelets trust).
	Cert tls.Certificate
	// CAs verify the kubelets' serving certificates.
	CAs *x509.CertPool
	// Dial, when set, opens the TCP connections to kubelets instead of a
	// plain dial from the server's own network namespace: `rudder up
	// --nodes` dials from the namespace its nodes' InternalIPs are in.
	// It gets only addresses kubeletAddress chose, and a context that
	// bounds the dial (5 s).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// SetKubeletClient installs the kubelet dialer: pods/log and the other
// node-backed requests go to the node's kubelet, and metrics.k8s.io is
// served from the kubelets' resource metrics. It must be called before
// the server serves.
func (s *Server) SetKubeletClient(cfg KubeletClientConfig) {
	d := newKubeletDialer(s, cfg)
	s.nodes = d
	s.resourceMetrics.dialer = d
}

// kubeletDialer implements NodeConnector over HTTPS to kubelets.
type kubeletDialer struct {
	s         *Server
	transport *http.Transport
	// podTransport reaches pods for pods/proxy and services/proxy.
	podTransport *http.Transport
	client       *http.Client
}

// kubeletSessionCache is how many kubelets' TLS sessions are kept.
const kubeletSessionCache = 8192

// errKubeletRefused is the socket-level refusal of an address that
// kubeletAddress did not choose for the request.
var errKubeletRefused = errors.New("refusing to dial a kubelet address not chosen for the request")

// labelSimulated marks a simulated node (simnode.LabelSimulated; the API
// server does not import the simulator).
const labelSimulated = "simnode.rudder.dev/simulated"

// kubeletAddrKey carries, in a request's context, the one host:port its
// dials may reach.
type kubeletAddrKey struct{}

func withKubeletAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, kubeletAddrKey{}, addr)
}

func newKubeletDialer(s *Server, cfg KubeletClientConfig) *kubeletDialer {
	dial := (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if cfg.Dial != nil {
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return cfg.Dial(ctx, network, addr)
		}
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if allowed, _ := ctx.Value(kubeletAddrKey{}).(string); allowed == "" || allowed != addr {
				return nil, fmt.Errorf("%w: %s", errKubeletRefused, addr)
			}
			return dial(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cfg.Cert},
			MinVersion:   tls.VersionTLS12,
			// Resumed sessions skip most of a handshake's signatures when
			// a node is scraped again.
			ClientSessionCache: tls.NewLRUClientSessionCache(kubeletSessionCache),
			// The chain is checked below; the names are not (see above).
			InsecureSkipVerify: true,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 {
					return errors.New("kubelet presented no certificate")
				}
				inter := x509.NewCertPool()
				for _, c := range cs.PeerCertificates[1:] {
					inter.AddCert(c)
				}
				_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: cfg.CAs, Intermediates: inter,
					KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
				return err
			},
		},
		TLSHandshakeTimeout: 5 * time.Second,
		// One connection per request: an idle connection to each of
		// thousands of nodes holds about 100 KiB on the two ends together,
		// while a resumed handshake (the session cache above) costs little.
		DisableKeepAlives: true,
	}
	// Pods are dialed the same way, only at the address the request
	// names; their certificates are not checked (as upstream's proxy to
	// pods does not).
	podTr := &http.Transport{
		DialContext: tr.DialContext,
		// #nosec G402 -- a pod's serving certificate is its own business.
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 5 * time.Second,
		DisableKeepAlives:   true,
	}
	return &kubeletDialer{s: s, transport: tr, podTransport: podTr, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// kubeletNotServed is the answer for a node advertising no kubelet port.
func kubeletNotServed(node *corev1.Node) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("node %q does not serve the kubelet API", node.Name))
}

// kubeletAddress is host:port of node's kubelet, or why it is not dialed.
func kubeletAddress(node *corev1.Node) (string, error) {
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		return "", kubeletNotServed(node)
	}
	addr := streamNodeAddress(node, corev1.NodeInternalIP)
	ip := net.ParseIP(addr)
	if ip == nil {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("node %q has no InternalIP to reach its kubelet at", node.Name))
	}
	if _, simulated := node.Labels[labelSimulated]; simulated && !ip.IsLoopback() {
		// A simulated node's kubelet is in this machine's simulator:
		// an address elsewhere is never dialed.
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("refusing to dial the kubelet of simulated node %q at %s: simulated nodes are reached on loopback addresses only", node.Name, addr))
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port))), nil
}

func (d *kubeletDialer) Kubelet(w http.ResponseWriter, r *http.Request, node *corev1.Node, path string, query url.Values) {
	host, err := kubeletAddress(node)
	if err != nil {
		d.s.writeError(w, r, err)
		return
	}
	target := &url.URL{Scheme: "https", Host: host, Path: path, RawQuery: query.Encode()}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out = pr.Out.WithContext(withKubeletAddr(pr.Out.Context(), host))
			pr.Out.URL = target
			pr.Out.Host = target.Host
			// The caller's credentials are for the API server only.
			pr.Out.Header.Del("Authorization")
			for k := range pr.Out.Header {
				if strings.HasPrefix(k, "Impersonate-") {
					pr.Out.Header.Del(k)
				}
			}
		},
		Transport:      d.transport,
		FlushInterval:  -1, // logs and streams go out as they come
		ModifyResponse: kubeletCheckResponse,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var se *apierrors.StatusError
			if errors.As(err, &se) {
				d.s.writeError(w, r, se)
				return
			}
			d.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach the kubelet of node %q: %v", node.Name, err)))
		},
	}
	rp.ServeHTTP(w, r)
}

// kubeletCheckResponse turns a kubelet's error answer (plain text) into an
// API status, as upstream's API server does, so clients show the
// kubelet's words: 400 is BadRequest, 500 InternalError, anything else
// a status of that code with the text as its message (reason NotFound,
// Unauthorized or Forbidden where the code says so). Upgrades (101) and
// successes pass through.
func kubeletCheckResponse(resp *http.Response) error {
	if resp.StatusCode < 300 {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	text := strings.TrimSpace(string(body))
	switch resp.StatusCode {
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(errors.New(text))
	}
	reason := metav1.StatusReasonUnknown
	switch resp.StatusCode {
	case http.StatusNotFound:
		reason = metav1.StatusReasonNotFound
	case http.StatusUnauthorized:
		reason = metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		// The kubelet refused the API server's kubelet client: kubectl
		// prints "Error from server (Forbidden): Forbidden (user=...)".
		reason = metav1.StatusReasonForbidden
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(resp.StatusCode), Reason: reason, Message: text}}
}

// Pod proxies to a pod on a real node, dialing its address the way the
// server dials kubelets (Dial: from the nodes' network when they have one
// of their own). Pods of simulated nodes, or of no known node, run
// nowhere: they are never dialed.
func (d *kubeletDialer) Pod(w http.ResponseWriter, r *http.Request, node *corev1.Node, target *url.URL) {
	if node == nil {
		streamNoNode{s: d.s}.Pod(w, r, node, target)
		return
	}
	if _, simulated := node.Labels[labelSimulated]; simulated {
		streamNoNode{s: d.s}.Pod(w, r, node, target)
		return
	}
	host := target.Host
	if target.Port() == "" {
		port := "80"
		if target.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(target.Hostname(), port)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out = pr.Out.WithContext(withKubeletAddr(pr.Out.Context(), host))
			pr.Out.URL = target
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Authorization")
			for k := range pr.Out.Header {
				if strings.HasPrefix(k, "Impersonate-") {
					pr.Out.Header.Del(k)
				}
			}
		},
		// Links in HTML answers are rewritten to go through this proxy
		// path, as upstream's pod and service proxies do.
		Transport:     &proxyutil.Transport{PathPrepend: proxyPrefix(r.URL.Path), RoundTripper: d.podTransport},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			d.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach %s: %v", target, err)))
		},
	}
	rp.ServeHTTP(w, r)
}

// proxyPrefix is a proxy request's path up to and including its
// "/proxy" segment: /api/v1/namespaces/ns/pods/name:port/proxy.
func proxyPrefix(p string) string {
	if i := strings.Index(p, "/proxy/"); i >= 0 {
		return p[:i+len("/proxy")]
	}
	return strings.TrimSuffix(p, "/")
}

// get fetches path from node's kubelet; a response other than 200 is an
// error.
func (d *kubeletDialer) get(ctx context.Context, node *corev1.Node, path string) ([]byte, error) {
	host, err := kubeletAddress(node)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(withKubeletAddr(ctx, host), http.MethodGet, "https://"+host+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("kubelet of node %q answered %s", node.Name, resp.Status)
	}
	return body, nil
}
