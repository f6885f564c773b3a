package nodeidentity

// The kubelet API's serving certificate. The API server checks a
// kubelet's certificate against the cluster CA when it forwards logs,
// exec and port-forward, so a joined node asks the cluster to sign one,
// as its own identity (system:node:<name>, after Bootstrap):
//
//	node                                        API server / controllers
//	 │ Node <name> exists, listing its IPs ──►  (created by the node if absent:
//	 │                                          NodeRestriction lets a node create itself)
//	 │ CertificateSigningRequest ────────────►  signer kubernetes.io/kubelet-serving
//	 │   CN system:node:<name>, O system:nodes    csrapproving approves it when the
//	 │   SANs: the node's IPs and name            requester is that node and every IP
//	 │   usages: digital signature,               SAN is one of the Node's addresses
//	 │     key encipherment, server auth        csrsigning: status.certificate
//	 │ write key, cert (0600) ◄───────────────
//
// Upstream's csrapproving leaves serving requests to a human; rudder's
// approver decides them (as k3s does by signing them itself), and checks
// the IP SANs against the Node's addresses. The Node must therefore
// exist before the request, which is why ServingCertificate registers a
// minimal one (name, the kubelet's standard labels, addresses) when it is
// missing, or adds the addresses when they changed: the kubelet adopts
// that Node when it starts, as it adopts one left by its previous run.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// The serving certificate's files in the identity directory, mode 0600.
const (
	ServingCertFile = "kubelet-serving.crt"
	ServingKeyFile  = "kubelet-serving.key"
)

// servingUsages are the usages a serving request asks for.
var servingUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth,
}

// ServingCertificate returns the kubelet API's certificate for nodeName
// at ips (SANs: the IPs and the node's name), signed by the cluster CA
// that dir holds (ca.crt, written by Bootstrap). A certificate in dir
// for exactly those names, with a tenth of its life left, is reused;
// otherwise the Node is made to list ips (see the file comment) and a
// kubelet-serving CSR is created with client, which must authenticate as
// system:node:<nodeName>, and waited for until ctx ends: give ctx a
// deadline. The key and certificate are kept in dir (0600).
func ServingCertificate(ctx context.Context, client kubernetes.Interface, nodeName string, ips []net.IP, dir string) (tls.Certificate, error) {
	fail := func(err error) (tls.Certificate, error) {
		return tls.Certificate{}, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	if errs := validation.IsDNS1123Subdomain(nodeName); len(errs) > 0 {
		return fail(fmt.Errorf("node name %q: %s", nodeName, strings.Join(errs, "; ")))
	}
	for _, ip := range ips {
		if ip == nil || ip.IsUnspecified() {
			return fail(fmt.Errorf("%v is not a node address", ip))
		}
	}
	if dir == "" {
		return fail(errors.New("no directory for the credentials"))
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return fail(fmt.Errorf("the cluster CA (bootstrap first): %w", err))
	}
	certPath, keyPath := filepath.Join(dir, ServingCertFile), filepath.Join(dir, ServingKeyFile)
	if err := ValidServing(dir, nodeName, ips, time.Now()); err == nil {
		return loadPair(certPath, keyPath)
	}
	// A certificate that is no longer good goes with its key; a key alone
	// is an interrupted request, kept to find that request again.
	if _, err := os.Stat(certPath); err == nil {
		for _, p := range []string{certPath, keyPath} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fail(err)
			}
		}
	}
	key, err := loadOrCreateKey(keyPath)
	if err != nil {
		return fail(err)
	}
	if err := ensureNode(ctx, client, nodeName, ips); err != nil {
		return fail(err)
	}
	certPEM, err := requestCertificate(ctx, client, key, nodeName, certRequest{
		signer:   certificatesv1.KubeletServingSignerName,
		usages:   servingUsages,
		dnsNames: []string{nodeName},
		ips:      ips,
	})
	if err != nil {
		return fail(err)
	}
	if _, err := checkIdentity(certPEM, key, nodeName, caPEM, time.Now(), x509.ExtKeyUsageServerAuth); err != nil {
		return fail(fmt.Errorf("the issued certificate: %w", err))
	}
	if err := writeFile(certPath, certPEM); err != nil {
		return fail(err)
	}
	return loadPair(certPath, keyPath)
}

// ValidServing reports, with the reason when not, whether dir holds a
// usable serving certificate for nodeName at exactly ips: a key and a
// certificate for it, chaining to dir's CA for server auth, with a tenth
// of its life left at now.
func ValidServing(dir, nodeName string, ips []net.IP, now time.Time) error {
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return err
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, ServingCertFile))
	if err != nil {
		return err
	}
	key, err := readKey(filepath.Join(dir, ServingKeyFile))
	if err != nil {
		return err
	}
	cert, err := checkIdentity(certPEM, key, nodeName, caPEM, now, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return err
	}
	if !slices.Equal(cert.DNSNames, []string{nodeName}) || !sameIPs(cert.IPAddresses, ips) {
		return fmt.Errorf("the certificate is for %v %v, not %s %v", cert.DNSNames, cert.IPAddresses, nodeName, ips)
	}
	return nil
}

func sameIPs(a, b []net.IP) bool {
	contains := func(set []net.IP, ip net.IP) bool {
		return slices.ContainsFunc(set, func(x net.IP) bool { return x.Equal(ip) })
	}
	for _, ip := range a {
		if !contains(b, ip) {
			return false
		}
	}
	for _, ip := range b {
		if !contains(a, ip) {
			return false
		}
	}
	return true
}

func loadPair(certPath, keyPath string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	return pair, nil
}

// ensureNode makes the Node nodeName exist and list every one of ips as
// an InternalIP, so the approver can check the request's IPs against it.
// A missing Node is created as the kubelet would register it, less what
// only the kubelet knows (capacity, conditions: it has none, so nothing
// is scheduled to it until the kubelet reports); an existing one whose
// addresses lack an IP gets the node's addresses, as the kubelet's next
// status would set them.
func ensureNode(ctx context.Context, client kubernetes.Interface, nodeName string, ips []net.IP) error {
	addresses := make([]corev1.NodeAddress, 0, len(ips)+1)
	for _, ip := range ips {
		addresses = append(addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}
	addresses = append(addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: nodeName})
	nodes := client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			node = &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{
					corev1.LabelHostname:   nodeName,
					corev1.LabelOSStable:   goruntime.GOOS,
					corev1.LabelArchStable: goruntime.GOARCH,
				}},
				Status: corev1.NodeStatus{Addresses: addresses},
			}
			_, err = nodes.Create(ctx, node, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("nodes"), nodeName, err)
			}
			if err != nil {
				return fmt.Errorf("registering node %q: %w", nodeName, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading node %q: %w", nodeName, err)
		}
		if listsAll(node.Status.Addresses, ips) {
			return nil
		}
		node.Status.Addresses = addresses
		if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return fmt.Errorf("updating the addresses of node %q: %w", nodeName, err)
		}
		return nil
	})
}

// listsAll reports whether every ip is one of addresses' IPs.
func listsAll(addresses []corev1.NodeAddress, ips []net.IP) bool {
	for _, ip := range ips {
		if !slices.ContainsFunc(addresses, func(a corev1.NodeAddress) bool {
			return (a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP) && ip.Equal(net.ParseIP(a.Address))
		}) {
			return false
		}
	}
	return true
}
