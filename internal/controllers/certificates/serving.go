package certificates

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Kubelet serving certificates. Upstream's csrapproving never approves
// them (kubeadm's users approve them by hand); rudder approves a node's
// request for its own serving certificate, as k3s does by signing them
// itself, when nothing in it reaches beyond what the node already
// claims through its own Node object:
//
//   - the requester is system:node:<name> in group system:nodes, and the
//     subject is that same identity (CN system:node:<name>, O
//     system:nodes);
//   - the usages are digital signature and server auth, with or without
//     key encipherment, and there are no email or URI SANs (the signer's
//     own rules);
//   - every DNS SAN is <name>;
//   - every IP SAN is an InternalIP or ExternalIP of the Node <name>.
//
// The first three never change: a request failing them is left to a
// human. The last depends on the Node, which a joining agent creates
// before it asks (nodeidentity.ServingCertificate): while the Node is
// missing or does not list an IP, the request is retried with backoff.

// servingApprovalMessage is the Approved condition's message.
const servingApprovalMessage = "Auto approving self kubelet serving certificate: the node's own name and addresses."

// errServingWaits: a serving request that may be approved once its Node
// lists its addresses.
type errServingWaits struct{ name, why string }

func (e *errServingWaits) Error() string {
	return fmt.Sprintf("kubelet serving csr %q not approved yet: %s", e.name, e.why)
}

func (a *approver) reconcileServing(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) (controller.Result, error) {
	nodeName, ok := selfServing(csr, req)
	if !ok {
		return controller.Result{}, nil // for a human to decide
	}
	if len(req.IPAddresses) > 0 {
		node, err := a.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return controller.Result{}, &errServingWaits{csr.Name, fmt.Sprintf("node %q does not exist", nodeName)}
		}
		if err != nil {
			return controller.Result{}, err
		}
		for _, ip := range req.IPAddresses {
			if !nodeHasIP(node, ip) {
				return controller.Result{}, &errServingWaits{csr.Name, fmt.Sprintf("node %q does not list address %s", nodeName, ip)}
			}
		}
	}
	return controller.Result{}, a.approve(ctx, csr, servingApprovalMessage)
}

// selfServing checks the parts of a serving request that do not depend
// on the Node, and returns the node it is for.
func selfServing(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) (string, bool) {
	nodeName, isNode := strings.CutPrefix(csr.Spec.Username, "system:node:")
	if !isNode || nodeName == "" || !slices.Contains(csr.Spec.Groups, "system:nodes") {
		return "", false
	}
	if req.Subject.CommonName != csr.Spec.Username || checkKubeletServing(req, csr.Spec.Usages) != nil {
		return "", false
	}
	for _, dns := range req.DNSNames {
		if dns != nodeName {
			return "", false
		}
	}
	return nodeName, true
}

// nodeHasIP reports whether ip is one of node's InternalIP or ExternalIP
// addresses.
func nodeHasIP(node *corev1.Node, ip net.IP) bool {
	for _, a := range node.Status.Addresses {
		if (a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP) && ip.Equal(net.ParseIP(a.Address)) {
			return true
		}
	}
	return false
}
