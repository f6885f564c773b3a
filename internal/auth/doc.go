// Package auth decides who is calling the API server and whether they may
// do what they ask. It owns no HTTP handlers and no storage: the API server
// calls it at fixed points of its request pipeline and turns its answers
// into responses, and RBAC objects reach it through RBACSource, which the
// server backs with its watch cache.
//
// # The pipeline
//
// Every request passes three stages, in this order:
//
//	     request
//	        │
//	1. authentication    Authenticator (NewAuthenticator over x509, bearer tokens, …)
//	        │              → *User, or 401
//	2. impersonation     Impersonate(user, r.Header, authorizer)
//	        │              → the *User the request acts as, or 400/403
//	3. authorization     Authorize(authorizer, Attributes{User: …})
//	        │              → nil, or 403 (*ForbiddenError), or 500
//	     admission, registry, storage
//
// Authentication answers "who holds these credentials". Each Authenticator
// looks for one kind of credential and says ok=false when the request has
// none of its kind, so they can be chained: NewAuthenticator tries them in
// order, adds system:authenticated to whoever succeeds, and turns "no
// credentials at all" into system:anonymous only when anonymous access is
// enabled (it is off by default). Invalid credentials are always a 401,
// never anonymous.
//
// Impersonation lets an authenticated user act as another (kubectl --as).
// The real user must be allowed verb "impersonate" on each part of the
// identity asked for — users, groups, uids, userextras/<key>, or
// serviceaccounts in the account's namespace — and those checks go to the
// same Authorizer as everything else, so RBAC rules grant impersonation.
// From then on the request is the impersonated user's.
//
// Authorization answers "may this user do this". NewNodeRBACAuthorizer is
// the chain (upstream's --authorization-mode=Node,RBAC): members of
// system:masters may do anything (so a broken RBAC setup can always be
// repaired), then the NodeAuthorizer decides for kubelets
// (system:node:<name> in system:nodes) — the secrets, config maps,
// claims, volumes and service-account tokens of the pods bound to that
// node, from a NodeGraph the server keeps by watching pods, plus the
// fixed NodeRules — then RBACAuthorizer evaluates ClusterRoleBindings
// and the namespace's RoleBindings. An authorizer that does not allow
// says DecisionNoOpinion and the next one is asked; a request nobody
// allows is a 403.
//
// Nodes join with bootstrap tokens ("<id>.<secret>", a Secret of type
// bootstrap.kubernetes.io/token in kube-system): the
// BootstrapTokenAuthenticator makes their holder system:bootstrap:<id>
// in system:bootstrappers, which the bootstrap policy lets ask for a
// kubelet client certificate and have it approved.
//
// # Usage (in the API server)
//
//	authn := auth.NewAuthenticator(auth.AuthenticatorConfig{
//		Authenticators: []auth.Authenticator{
//			auth.NewX509Authenticator(auth.X509Config{}), // needs tls.VerifyClientCertIfGiven + ClientCAs
//			tokenFile,                                    // auth.LoadTokenFile(--token-auth-file), if given
//		},
//		Anonymous: anonymousAuth,
//	})
//	authz := auth.NewNodeRBACAuthorizer(rbacSource, nodeGraph) // graph fed by pod, PVC and VolumeAttachment reflectors
//
//	// per request
//	user, ok, err := authn.AuthenticateRequest(r)
//	if err != nil || !ok {
//		// 401 Unauthorized
//	}
//	r.Header.Del("Authorization") // the credential is spent; never forward it
//	if auth.HasImpersonationHeaders(r.Header) {
//		if user, err = auth.Impersonate(user, r.Header, authz); err != nil {
//			// write err: it is an apierrors.APIStatus (400, 403 or 500)
//		}
//		auth.DeleteImpersonationHeaders(r.Header)
//	}
//	attrs := auth.Attributes{User: user, Verb: verb, ResourceRequest: true, … from the request info}
//	if err := auth.Authorize(authz, attrs); err != nil {
//		// write err: *ForbiddenError (403) or apierrors internal error (500)
//	}
//
// Attributes must be filled the way upstream's request info does, because
// RBAC rules are written against that: Verb is the API verb (get, list,
// watch, create, update, patch, delete, deletecollection), not the HTTP
// method; Resource and Subresource are separate ("pods" and "log");
// APIGroup is "" for the core group; Namespace is set for namespaced
// requests and, for a request on a Namespace object itself, is that
// namespace's name (so a RoleBinding to "view" lets a user read the
// namespace it is in). Non-resource paths (/healthz, /apis) have
// ResourceRequest false and Path set.
//
// # Errors and messages
//
// Forbidden answers carry upstream's exact text, which kubectl prints and
// tests match, e.g.
//
//	pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"
//
// *ForbiddenError builds it from the denied Attributes and the
// authorizer's reason, and implements apierrors.APIStatus, so the server
// writes Status() as the body and apierrors.IsForbidden recognises it.
//
// # Bootstrap policy
//
// BootstrapClusterRoles and BootstrapClusterRoleBindings return upstream's
// default user-facing policy: cluster-admin (bound to system:masters), the
// aggregated admin, edit and view roles with their rules already filled
// in, and the roles every user needs for discovery, health checks and
// asking what they may do. The server creates them on first start.
// RBACAuthorizer.RulesFor lists the rules that apply to a user in a
// namespace, for SelfSubjectRulesReview.
//
// # Concurrency
//
// Every Authenticator and Authorizer here is safe for concurrent use and
// keeps no per-request state. Users they return belong to the caller.
package auth
