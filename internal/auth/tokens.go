package auth

// Service-account tokens are JWTs the API server signs with the cluster's
// service-account key (pki's sa.key) when a client asks for one through
// serviceaccounts/<name>/token (TokenRequest, `kubectl create token`).
// Anyone holding the public half can check them offline (the API server
// publishes it at /openid/v1/jwks); the API server checks more: that the
// ServiceAccount, and the pod, secret or node the token is bound to, still
// exist with the UIDs the token names, so deleting any of them revokes the
// token at once.
//
// A token looks like upstream's to the byte, because tools decode them:
//
//	header  {"alg":"ES256","kid":"<base64url SHA-256 of the PKIX public key>"}
//	payload {"aud":["https://kubernetes.default.svc.cluster.local"],"exp":…,"iat":…,
//	         "iss":"https://kubernetes.default.svc.cluster.local","jti":"<uuid>",
//	         "kubernetes.io":{"namespace":"ns","pod":{"name":…,"uid":…},
//	                          "serviceaccount":{"name":"default","uid":…}},
//	         "nbf":…,"sub":"system:serviceaccount:ns:default"}
//
// They are signed and verified with go-jose, upstream's JOSE library, so
// keys are sorted at every level as upstream's are, and a signature no
// key verifies fails with upstream's words.

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/clock"
)

// DefaultServiceAccountIssuer is the issuer rudder names in its tokens
// unless told otherwise: the in-cluster name of the API server, which is
// what kubeadm-style clusters configure.
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// Extra keys of a service account's user, as upstream sets them. A
// pod-bound token carries the pod (and its node); every token carries its
// JTI as the credential ID, which audit logs use to tell tokens apart.
const (
	PodNameExtraKey      = "authentication.kubernetes.io/pod-name"
	PodUIDExtraKey       = "authentication.kubernetes.io/pod-uid"
	NodeNameExtraKey     = "authentication.kubernetes.io/node-name"
	NodeUIDExtraKey      = "authentication.kubernetes.io/node-uid"
	CredentialIDExtraKey = "authentication.kubernetes.io/credential-id"
)

// tokenLeeway is the clock skew forgiven when checking exp, nbf and iat,
// and the grace before a deleted object's tokens stop working: one
// minute, upstream's.
const tokenLeeway = time.Minute

// Audiences is a token's "aud" claim. On the wire a single audience may be
// a bare string; rudder always writes an array, as upstream does.
type Audiences []string

func (a *Audiences) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*a = Audiences{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(data, &many); err != nil {
		return err
	}
	*a = many
	return nil
}

// Intersect returns the audiences of want that a also has, in want's
// order.
func (a Audiences) Intersect(want []string) Audiences {
	out := Audiences{}
	for _, w := range want {
		if slices.Contains(a, w) {
			out = append(out, w)
		}
	}
	return out
}

// ObjectRef names an object a token belongs or is bound to.
type ObjectRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// KubernetesClaims is the private "kubernetes.io" claim: whose token it is
// and what it is bound to. A token is bound to at most one of Pod, Secret
// or Node, except that a pod-bound token also names the pod's node.
type KubernetesClaims struct {
	Namespace      string     `json:"namespace,omitempty"`
	ServiceAccount ObjectRef  `json:"serviceaccount"`
	Pod            *ObjectRef `json:"pod,omitempty"`
	Secret         *ObjectRef `json:"secret,omitempty"`
	Node           *ObjectRef `json:"node,omitempty"`
	// WarnAfter is set on the long-lived tokens the kubelet asks for (see
	// ExtendedExpiration): past it the token still works, but upstream
	// audits its use as stale.
	WarnAfter *int64 `json:"warnafter,omitempty"`
}

// ServiceAccountClaims is a token's payload. Times are Unix seconds.
type ServiceAccountClaims struct {
	Issuer     string           `json:"iss,omitempty"`
	Subject    string           `json:"sub,omitempty"`
	Audience   Audiences        `json:"aud,omitempty"`
	Expiry     int64            `json:"exp,omitempty"`
	NotBefore  int64            `json:"nbf,omitempty"`
	IssuedAt   int64            `json:"iat,omitempty"`
	ID         string           `json:"jti,omitempty"`
	Kubernetes KubernetesClaims `json:"kubernetes.io"`
}

// BoundObjects are what a token may be bound to. Pod and Secret exclude
// each other; Node alone binds the token to a node, and with Pod it only
// records where the pod runs.
type BoundObjects struct {
	Pod    *corev1.Pod
	Secret *corev1.Secret
	Node   *corev1.Node
}

// NewServiceAccountClaims builds the claims of a token for sa issued at
// now and valid for expirationSeconds, as upstream's TokenRequest does:
// subject system:serviceaccount:<ns>:<name>, nbf and iat now, a fresh
// UUID as jti, and the bound objects' names and UIDs. warnAfterSeconds,
// when positive, sets kubernetes.io.warnafter that far after now. The
// issuer is left for the TokenIssuer to fill.
func NewServiceAccountClaims(sa *corev1.ServiceAccount, bound BoundObjects, audiences []string, now time.Time, expirationSeconds, warnAfterSeconds int64) (*ServiceAccountClaims, error) {
	if bound.Secret != nil && (bound.Pod != nil || bound.Node != nil) {
		return nil, errors.New("internal error, token can only be bound to one object type")
	}
	c := &ServiceAccountClaims{
		Subject:   ServiceAccountUsername(sa.Namespace, sa.Name),
		Audience:  slices.Clone(audiences),
		IssuedAt:  now.Unix(),
		NotBefore: now.Unix(),
		Expiry:    now.Add(time.Duration(expirationSeconds) * time.Second).Unix(),
		ID:        string(uuid.NewUUID()),
		Kubernetes: KubernetesClaims{
			Namespace:      sa.Namespace,
			ServiceAccount: ObjectRef{Name: sa.Name, UID: string(sa.UID)},
		},
	}
	switch {
	case bound.Pod != nil:
		c.Kubernetes.Pod = &ObjectRef{Name: bound.Pod.Name, UID: string(bound.Pod.UID)}
		if bound.Node != nil {
			c.Kubernetes.Node = &ObjectRef{Name: bound.Node.Name, UID: string(bound.Node.UID)}
		}
	case bound.Secret != nil:
		c.Kubernetes.Secret = &ObjectRef{Name: bound.Secret.Name, UID: string(bound.Secret.UID)}
	case bound.Node != nil:
		c.Kubernetes.Node = &ObjectRef{Name: bound.Node.Name, UID: string(bound.Node.UID)}
	}
	if warnAfterSeconds > 0 {
		w := now.Add(time.Duration(warnAfterSeconds) * time.Second).Unix()
		c.Kubernetes.WarnAfter = &w
	}
	return c, nil
}

// TokenIssuer signs service-account tokens with one private key. It is
// immutable and safe for concurrent use.
type TokenIssuer struct {
	issuer string
	key    crypto.Signer
	signer jose.Signer
}

// NewTokenIssuer returns an issuer that names itself issuer in "iss" and
// signs with key: RS256 for an RSA key, ES256/384/512 for an ECDSA key by
// its curve, as upstream chooses.
func NewTokenIssuer(issuer string, key crypto.Signer) (*TokenIssuer, error) {
	if issuer == "" {
		return nil, errors.New("service-account token issuer: issuer is empty")
	}
	if key == nil {
		return nil, errors.New("service-account token issuer: no signing key")
	}
	alg, err := SigningAlgorithm(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(alg), Key: key},
		&jose.SignerOptions{ExtraHeaders: map[jose.HeaderKey]interface{}{"kid": kid}})
	if err != nil {
		return nil, fmt.Errorf("service-account token issuer: %w", err)
	}
	return &TokenIssuer{issuer: issuer, key: key, signer: signer}, nil
}

// Issuer is the "iss" of the tokens this issuer signs.
func (i *TokenIssuer) Issuer() string { return i.issuer }

// PublicKey is the key that verifies this issuer's tokens.
func (i *TokenIssuer) PublicKey() crypto.PublicKey { return i.key.Public() }

// Sign sets c.Issuer and returns the signed, compact-serialized token.
func (i *TokenIssuer) Sign(c *ServiceAccountClaims) (string, error) {
	c.Issuer = i.issuer
	token, err := jwt.Signed(i.signer).Claims(c).Serialize()
	if err != nil {
		return "", fmt.Errorf("sign service-account token: %w", err)
	}
	return token, nil
}

// KeyID is upstream's "kid" for a public key: the unpadded base64url
// SHA-256 of its PKIX DER encoding. Verifiers match it against the JWKS.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("service-account key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// SigningAlgorithm is the JWS algorithm tokens signed by pub's private
// half use.
func SigningAlgorithm(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return "RS256", nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", nil
		case elliptic.P384():
			return "ES384", nil
		case elliptic.P521():
			return "ES512", nil
		}
		return "", fmt.Errorf("service-account key: unsupported ECDSA curve %s", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("service-account key: unsupported key type %T (want RSA or ECDSA)", pub)
}

// ParsePublicKeys reads every public key in PEM data as upstream reads
// --service-account-key-file (client-go keyutil): PKIX public keys,
// certificates, and the public halves of RSA and ECDSA private keys. pki's
// sa.pub is one such file.
func ParsePublicKeys(data []byte) ([]crypto.PublicKey, error) {
	keys, err := keyutil.ParsePublicKeysPEM(data)
	if err != nil {
		return nil, err
	}
	out := make([]crypto.PublicKey, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out, nil
}

// ServiceAccountObjects is where the token authenticator, and the API
// server issuing tokens, look up the objects a token names. Each method
// returns an apierrors NotFound error when the object does not exist. The
// objects may be shared: callers must not modify them.
type ServiceAccountObjects interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	Node(ctx context.Context, name string) (*corev1.Node, error)
}

// ServiceAccountTokenConfig configures NewServiceAccountTokenAuthenticator.
type ServiceAccountTokenConfig struct {
	// Issuers are the "iss" values accepted (--service-account-issuer;
	// the first is the one rudder signs with). Tokens of other issuers
	// are not this authenticator's: ok=false, no error.
	Issuers []string
	// Keys verify signatures; a token signed by any of them is genuine.
	Keys []crypto.PublicKey
	// APIAudiences are the audiences the API server itself accepts
	// (--api-audiences): what a request's token must be for unless the
	// context names others (WithAudiences, as TokenReview does).
	APIAudiences []string
	// Objects looks up the service account and bound objects. Required.
	Objects ServiceAccountObjects
	Clock   clock.PassiveClock
}

// ServiceAccountTokenAuthenticator is the TokenAuthenticator of
// service-account tokens. It is safe for concurrent use.
type ServiceAccountTokenAuthenticator struct {
	cfg ServiceAccountTokenConfig
}

// NewServiceAccountTokenAuthenticator checks cfg and returns the
// authenticator.
func NewServiceAccountTokenAuthenticator(cfg ServiceAccountTokenConfig) (*ServiceAccountTokenAuthenticator, error) {
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("service-account tokens: no issuer")
	}
	if len(cfg.Keys) == 0 {
		return nil, errors.New("service-account tokens: no verification keys")
	}
	if cfg.Objects == nil {
		return nil, errors.New("service-account tokens: no object source")
	}
	for _, k := range cfg.Keys {
		if _, err := SigningAlgorithm(k); err != nil {
			return nil, err
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	cfg.Issuers = slices.Clone(cfg.Issuers)
	cfg.Keys = slices.Clone(cfg.Keys)
	cfg.APIAudiences = slices.Clone(cfg.APIAudiences)
	return &ServiceAccountTokenAuthenticator{cfg: cfg}, nil
}

// tokenAlgorithms are the signatures a token may carry: those of RSA and
// ECDSA keys.
var tokenAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512,
}

// AuthenticateToken implements TokenAuthenticator, in upstream's order:
//
//  1. A token that is not a JWT of one of our issuers is not ours
//     (ok=false, no error), so other token sources may know it.
//  2. The signature must verify with one of the keys.
//  3. Its audiences must meet the requested ones (WithAudiences, else the
//     API audiences); a token with no "aud" is taken as for the API.
//  4. exp, nbf and iat must hold, with a minute's leeway.
//  5. The service account, and the pod, secret or node the token is
//     bound to, must exist with the UIDs the token names and not have
//     been deleted more than a minute ago.
//
// The user is system:serviceaccount:<ns>:<name> in the service-account
// groups, with the bound pod, its node and the token's JTI as extra. The
// audiences the token was found valid for are recorded in the context
// (AuthenticatedAudiences).
func (a *ServiceAccountTokenAuthenticator) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	if !slices.Contains(a.cfg.Issuers, unverifiedIssuer(token)) {
		return nil, false, nil
	}
	claims, err := a.verify(token)
	if err != nil {
		return nil, false, err
	}
	if claims == nil {
		return nil, false, nil
	}
	if !slices.Contains(a.cfg.Issuers, claims.Issuer) {
		return nil, false, fmt.Errorf("token issuer %q is invalid", claims.Issuer)
	}
	tokenAuds := claims.Audience
	if len(tokenAuds) == 0 {
		tokenAuds = a.cfg.APIAudiences
	}
	requested, ok := audiencesFrom(ctx)
	if !ok {
		requested = a.cfg.APIAudiences
	}
	auds := tokenAuds.Intersect(requested)
	if len(auds) == 0 && len(a.cfg.APIAudiences) != 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(tokenAuds), requested)
	}
	u, err := a.validate(ctx, claims)
	if err != nil {
		return nil, false, err
	}
	setAuthenticatedAudiences(ctx, auds)
	return u, true, nil
}

// unverifiedIssuer reads "iss" without checking anything, only to decide
// whether the token is ours to judge. Nothing else may trust it.
func unverifiedIssuer(token string) string {
	tok, err := jwt.ParseSigned(token, tokenAlgorithms)
	if err != nil {
		return ""
	}
	var c jwt.Claims
	if tok.UnsafeClaimsWithoutVerification(&c) != nil {
		return ""
	}
	return c.Issuer
}

// verify checks the signature with each key in turn and decodes the
// claims. A token that does not even parse as a JWS is nil, nil: not
// ours, as upstream treats it.
func (a *ServiceAccountTokenAuthenticator) verify(token string) (*ServiceAccountClaims, error) {
	tok, err := jwt.ParseSigned(token, tokenAlgorithms)
	if err != nil {
		return nil, nil
	}
	var errs []error
	for _, k := range a.cfg.Keys {
		var c ServiceAccountClaims
		if err := tok.Claims(k, &c); err != nil {
			errs = append(errs, err)
			continue
		}
		return &c, nil
	}
	return nil, utilerrors.NewAggregate(errs)
}

// validate checks times and the objects the token names, and builds the
// user. Its messages are upstream's.
func (a *ServiceAccountTokenAuthenticator) validate(ctx context.Context, c *ServiceAccountClaims) (*User, error) {
	now := a.cfg.Clock.Now()
	switch {
	case c.NotBefore != 0 && now.Add(tokenLeeway).Before(time.Unix(c.NotBefore, 0)):
		return nil, errors.New("service account token is not valid yet")
	case c.Expiry != 0 && now.Add(-tokenLeeway).After(time.Unix(c.Expiry, 0)):
		return nil, errors.New("service account token has expired")
	case c.IssuedAt != 0 && now.Add(tokenLeeway).Before(time.Unix(c.IssuedAt, 0)):
		return nil, errors.New("service account token is issued in the future")
	}
	// Objects deleted up to a minute ago still count, as upstream: a
	// graceful deletion must not cut off the pod's own last requests.
	deleted := func(dt *metav1.Time) bool { return dt != nil && dt.Time.Before(now.Add(-tokenLeeway)) }
	k := c.Kubernetes
	ns, sa := k.Namespace, k.ServiceAccount
	account, err := a.cfg.Objects.ServiceAccount(ctx, ns, sa.Name)
	if err != nil {
		return nil, err
	}
	if deleted(account.DeletionTimestamp) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, sa.Name)
	}
	if string(account.UID) != sa.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", account.UID, sa.UID)
	}
	invalidated := errors.New("service account token has been invalidated")
	if ref := k.Secret; ref != nil {
		secret, err := a.cfg.Objects.Secret(ctx, ns, ref.Name)
		if err != nil {
			return nil, invalidated
		}
		if deleted(secret.DeletionTimestamp) {
			return nil, invalidated
		}
		if string(secret.UID) != ref.UID {
			return nil, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", secret.UID, ref.UID)
		}
	}
	u := &User{Name: ServiceAccountUsername(ns, sa.Name), UID: sa.UID, Groups: ServiceAccountGroups(ns)}
	extra := map[string][]string{}
	if ref := k.Pod; ref != nil {
		pod, err := a.cfg.Objects.Pod(ctx, ns, ref.Name)
		if err != nil {
			return nil, invalidated
		}
		if deleted(pod.DeletionTimestamp) {
			return nil, invalidated
		}
		if string(pod.UID) != ref.UID {
			return nil, fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", pod.UID, ref.UID)
		}
		if ref.Name != "" && ref.UID != "" {
			extra[PodNameExtraKey] = []string{ref.Name}
			extra[PodUIDExtraKey] = []string{ref.UID}
		}
	}
	if ref := k.Node; ref != nil {
		// A pod-bound token only records its pod's node: the pod's
		// existence is what keeps it valid. A node-bound token lives as
		// long as its node.
		if k.Pod == nil {
			node, err := a.cfg.Objects.Node(ctx, ref.Name)
			if err != nil {
				return nil, invalidated
			}
			if string(node.UID) != ref.UID {
				return nil, fmt.Errorf("node UID (%s) does not match service account node ref claim (%s)", node.UID, ref.UID)
			}
		}
		if ref.Name != "" {
			extra[NodeNameExtraKey] = []string{ref.Name}
			if ref.UID != "" {
				extra[NodeUIDExtraKey] = []string{ref.UID}
			}
		}
	}
	if c.ID != "" {
		extra[CredentialIDExtraKey] = []string{"JTI=" + c.ID}
	}
	if len(extra) > 0 {
		u.Extra = extra
	}
	return u, nil
}

// audienceState rides in a request's context: the audiences asked for,
// and, once a token authenticator accepted the token, those it was valid
// for. It is a pointer so that the authenticator deep in the chain can
// report back to whoever set it (TokenReview).
type audienceState struct {
	want Audiences
	got  Audiences
}

type audienceKey struct{}

// WithAudiences returns a context in which token authenticators accept
// only tokens meant for one of auds, and record the ones that matched
// (AuthenticatedAudiences). Without it they use the API audiences.
func WithAudiences(ctx context.Context, auds []string) context.Context {
	return context.WithValue(ctx, audienceKey{}, &audienceState{want: slices.Clone(auds)})
}

func audiencesFrom(ctx context.Context) (Audiences, bool) {
	st, ok := ctx.Value(audienceKey{}).(*audienceState)
	if !ok {
		return nil, false
	}
	return st.want, true
}

func setAuthenticatedAudiences(ctx context.Context, auds Audiences) {
	if st, ok := ctx.Value(audienceKey{}).(*audienceState); ok {
		st.got = auds
	}
}

// AuthenticatedAudiences returns the audiences the token authenticated in
// a context made by WithAudiences was valid for; nil if none was.
func AuthenticatedAudiences(ctx context.Context) []string {
	if st, ok := ctx.Value(audienceKey{}).(*audienceState); ok {
		return st.got
	}
	return nil
}

// AudienceAgnostic wraps a token source whose tokens name no audience (a
// static token file) so that they count as meant for the API server
// only, as upstream does: asked for other audiences it knows no token,
// and on success it reports the requested API audiences as the token's.
func AudienceAgnostic(apiAudiences []string, t TokenAuthenticator) TokenAuthenticator {
	return &audienceAgnostic{implicit: slices.Clone(apiAudiences), t: t}
}

type audienceAgnostic struct {
	implicit Audiences
	t        TokenAuthenticator
}

func (a *audienceAgnostic) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	want, ok := audiencesFrom(ctx)
	if !ok {
		return a.t.AuthenticateToken(ctx, token)
	}
	auds := a.implicit.Intersect(want)
	if len(auds) == 0 {
		return nil, false, nil
	}
	u, ok, err := a.t.AuthenticateToken(ctx, token)
	if err != nil || !ok {
		return nil, false, err
	}
	setAuthenticatedAudiences(ctx, auds)
	return u, true, nil
}
