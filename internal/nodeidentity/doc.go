// Package nodeidentity gives a joining node its credentials: TLS
// bootstrapping, as the kubelet does it upstream.
//
// A node that joins a cluster holds only a bootstrap token ("<id>.<secret>",
// from `rudder token create`) and the cluster's CA certificate. Bootstrap
// trades them for a client certificate of its own:
//
//	node                                      API server / controllers
//	 │ ECDSA P-256 key, kept in dir
//	 │ CertificateSigningRequest ──────────►  authenticated as system:bootstrap:<id>
//	 │   signer kubernetes.io/kube-apiserver-client-kubelet
//	 │   CN system:node:<name>, O system:nodes
//	 │                                        csrapproving: the requester may create
//	 │                                          certificatesigningrequests/nodeclient → Approved
//	 │ watch the CSR  ◄──────────────────────  csrsigning: status.certificate
//	 │ write key, cert, CA, kubelet.kubeconfig (0600)
//	 ▼
//	the kubelet runs as system:node:<name>: the Node authorizer and
//	NodeRestriction confine it to its own Node, Lease and pods.
//
// The token is used for nothing else and is not written anywhere. A node
// restarted with its certificate still valid reuses it without asking
// again; a bootstrap interrupted after the CSR was created resumes it,
// because the key is written first and the CSR is named after the key.
//
// The kubelet API needs a serving certificate the API server trusts (it
// checks kubelets against the cluster CA). ServingCertificate asks for
// one as the node itself, after Bootstrap: signer
// kubernetes.io/kubelet-serving, SANs the node's IPs and name. rudder's
// approver accepts it only for IPs the node's own Node object lists, so
// ServingCertificate first registers a minimal Node (or adds the
// addresses), which the kubelet adopts when it starts (serving.go).
//
// # Usage (in the agent: agent.Join)
//
//	kubeconfig, err := nodeidentity.Bootstrap(ctx, "https://10.0.0.1:6443", caPEM, token, nodeName, "/var/lib/rudder/agent")
//	// kubeconfig = /var/lib/rudder/agent/kubelet.kubeconfig, for clientcmd
//	client := kubernetes.NewForConfigOrDie(restConfigFrom(kubeconfig))
//	serving, err := nodeidentity.ServingCertificate(ctx, client, nodeName, []net.IP{nodeIP}, "/var/lib/rudder/agent")
//
// Bootstrap waits until the certificate is issued or ctx ends: give it a
// deadline. It trusts the server only through caPEM or, with caPEM nil,
// through kubeadm's token discovery: the kube-public/cluster-info
// ConfigMap names the CA and carries, per bootstrap token, a JWS
// signature of that content keyed with the token's secret (written by the
// bootstrapsigner controller), which the node checks before believing
// the CA. Never trust on first use.
//
// This package is a leaf: it imports client-go and the API types only,
// and talks to the cluster through the API like any other client.
package nodeidentity
