// Package certificates holds the controllers that turn
// CertificateSigningRequests into certificates, as kube-controller-manager's
// "csrapproving" and "csrsigning" do.
//
// A request goes through three hands, each acting through its own door of
// the API (see the registry's certificates.go):
//
//	requester ──create──▶ CSR ◀──/approval── approver ("csrapproving", or a human: kubectl certificate approve)
//	                       │
//	                       └──◀──/status──── signer ("csrsigning"): status.certificate, or a Failed condition
//
// The signer serves three signers with the cluster CA and leaves requests
// for any other signer name alone:
//
//   - kubernetes.io/kube-apiserver-client: any client certificate; the
//     subject's CN becomes the user name and its Os the groups when the
//     certificate is presented to the API server. Usages: client auth,
//     optionally digital signature and key encipherment.
//   - kubernetes.io/kube-apiserver-client-kubelet: a kubelet's client
//     certificate, CN system:node:<name>, O system:nodes, no SANs.
//   - kubernetes.io/kubelet-serving: a kubelet's serving certificate, the
//     same subject plus the node's DNS or IP SANs.
//
// An approved request that breaks its signer's rules gets a Failed
// condition (reason SignerValidationFailure) and is never signed. A denied
// request is never signed. A certificate lives min(spec.expirationSeconds,
// --cluster-signing-duration), at least ten minutes, backdated five
// minutes for clock skew and never past the CA's own expiry.
//
// The approver approves two kinds of request; everything else waits for
// a human:
//
//   - kubelet client requests, when their recorded requester holds
//     "create" on certificatesigningrequests/selfnodeclient (a node
//     renewing its own certificate) or /nodeclient (a bootstrap identity
//     asking for any node's), as upstream's csrapproving does;
//   - kubelet serving requests by a node for itself, which upstream
//     leaves to a human and rudder approves (as k3s signs them itself)
//     when they claim nothing the node does not already claim through
//     its Node: requester system:node:<name> in system:nodes, the same
//     subject (O system:nodes), the signer's usages, DNS SANs only
//     <name>, IP SANs only the Node's InternalIP/ExternalIP addresses.
//     A joining node therefore creates its Node (NodeRestriction lets it)
//     before it asks; while the Node is missing or lacks an address, the
//     request is retried with backoff (serving.go).
//
// The client permission check is an AccessReviewer: the API server does
// not serve SubjectAccessReview yet, so the default evaluates the API
// server's authorizer chain in-process over RBAC objects read through
// informers; APIReviewer is the drop-in once the API exists.
//
// Both controllers are level-based on one key, the request's name: the
// plan (planSigning, candidates) is pure, the reconciler does the one
// write. Usage, through the controller manager:
//
//	signing := certificates.NewSigningDescriptor(caCertPEM, caKeyPEM)
//	approving := certificates.ApprovingDescriptor
package certificates
