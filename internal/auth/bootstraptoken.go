package auth

// Bootstrap tokens: the short shared secrets a new node joins with
// (`rudder token create`, kubeadm's `kubeadm token create`). A token
// "abcdef.0123456789abcdef" is an ID and a secret; it lives as a Secret of
// type bootstrap.kubernetes.io/token named bootstrap-token-<id> in
// kube-system, so that an administrator lists, expires and revokes tokens
// with the API like any other object. Its holder authenticates as
// system:bootstrap:<id> in group system:bootstrappers, which the
// bootstrap policy lets create a CertificateSigningRequest for a kubelet
// client certificate, and nothing more.

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
)

// The bootstrap token format and Secret layout, upstream's
// (k8s.io/cluster-bootstrap/token/api).
const (
	BootstrapTokenSecretType   corev1.SecretType = "bootstrap.kubernetes.io/token"
	BootstrapTokenSecretPrefix                   = "bootstrap-token-"
	BootstrapTokenNamespace                      = "kube-system"

	BootstrapTokenIDKey           = "token-id"
	BootstrapTokenSecretKey       = "token-secret"
	BootstrapTokenDescriptionKey  = "description"
	BootstrapTokenExpirationKey   = "expiration"
	BootstrapTokenUsageAuthKey    = "usage-bootstrap-authentication"
	BootstrapTokenUsageSigningKey = "usage-bootstrap-signing"
	BootstrapTokenExtraGroupsKey  = "auth-extra-groups"

	BootstrapUserPrefix       = "system:bootstrap:"
	BootstrappersGroup        = "system:bootstrappers"
	BootstrapGroupPrefix      = "system:bootstrappers:"
	BootstrapDefaultNodeGroup = "system:bootstrappers:rudder:default-node-token"
)

var (
	bootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	bootstrapGroupRE = regexp.MustCompile(`^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$`)
)

// ParseBootstrapToken splits "<id>.<secret>" (id [a-z0-9]{6}, secret
// [a-z0-9]{16}); ok is false for anything else.
func ParseBootstrapToken(token string) (id, secret string, ok bool) {
	m := bootstrapTokenRE.FindStringSubmatch(token)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// ValidateBootstrapGroups checks auth-extra-groups: each must be in the
// system:bootstrappers: namespace, so a token can never make its holder
// a member of system:masters or system:nodes.
func ValidateBootstrapGroups(groups []string) error {
	for _, g := range groups {
		if !bootstrapGroupRE.MatchString(g) {
			return fmt.Errorf("bootstrap group %q is invalid (must match %s)", g, bootstrapGroupRE)
		}
	}
	return nil
}

// BootstrapTokenSecrets is where the authenticator reads token Secrets:
// the API server backs it with its watch cache (ServiceAccountObjects
// satisfies it). Secret returns an apierrors NotFound error when there
// is none; the object is shared and must not be modified.
type BootstrapTokenSecrets interface {
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// BootstrapTokenAuthenticator is the TokenAuthenticator of bootstrap
// tokens. It is safe for concurrent use.
type BootstrapTokenAuthenticator struct {
	secrets BootstrapTokenSecrets
	clock   clock.PassiveClock
}

// NewBootstrapTokenAuthenticator returns the authenticator over secrets;
// a nil clock is the real one.
func NewBootstrapTokenAuthenticator(secrets BootstrapTokenSecrets, clk clock.PassiveClock) *BootstrapTokenAuthenticator {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &BootstrapTokenAuthenticator{secrets: secrets, clock: clk}
}

// AuthenticateToken implements TokenAuthenticator, as upstream's
// bootstrap authenticator does. A token not of the bootstrap form is not
// ours (ok=false, no error); so, deliberately, is one whose Secret is
// missing, being deleted, of another type, holding another secret
// (compared in constant time), expired (an unparsable expiration counts
// as expired), or not marked for authentication: the bearer
// authenticator then answers 401 without saying which. Only a matching
// token whose Secret names invalid extra groups is an error. The user is
// system:bootstrap:<id> in system:bootstrappers and the extra groups.
func (a *BootstrapTokenAuthenticator) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	id, secret, ok := ParseBootstrapToken(token)
	if !ok {
		return nil, false, nil
	}
	name := BootstrapTokenSecretPrefix + id
	s, err := a.secrets.Secret(ctx, BootstrapTokenNamespace, name)
	if apierrors.IsNotFound(err) || (err == nil && s == nil) {
		slog.Debug("bootstrap token: no secret", "secret", name)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if s.DeletionTimestamp != nil {
		return nil, false, nil
	}
	if s.Type != BootstrapTokenSecretType {
		slog.Debug("bootstrap token: secret of the wrong type", "secret", name, "type", s.Type)
		return nil, false, nil
	}
	if subtle.ConstantTimeCompare(s.Data[BootstrapTokenSecretKey], []byte(secret)) != 1 {
		slog.Debug("bootstrap token: wrong secret", "secret", name)
		return nil, false, nil
	}
	if string(s.Data[BootstrapTokenIDKey]) != id {
		return nil, false, nil
	}
	if BootstrapTokenExpired(s, a.clock.Now()) {
		slog.Debug("bootstrap token: expired", "secret", name)
		return nil, false, nil
	}
	if string(s.Data[BootstrapTokenUsageAuthKey]) != "true" {
		return nil, false, nil
	}
	groups := []string{BootstrappersGroup}
	if extra := strings.TrimSpace(string(s.Data[BootstrapTokenExtraGroupsKey])); extra != "" {
		for _, g := range strings.Split(extra, ",") {
			if g = strings.TrimSpace(g); g != "" && g != BootstrappersGroup {
				groups = append(groups, g)
			}
		}
		if err := ValidateBootstrapGroups(groups[1:]); err != nil {
			return nil, false, fmt.Errorf("bootstrap secret %s/%s: %w", BootstrapTokenNamespace, name, err)
		}
	}
	return &User{Name: BootstrapUserPrefix + id, Groups: groups}, true, nil
}

// BootstrapTokenExpired reports whether a token Secret's expiration
// (RFC 3339) has passed at now. No expiration never expires; one that
// does not parse has expired, so a typo never makes a token eternal.
func BootstrapTokenExpired(s *corev1.Secret, now time.Time) bool {
	raw := string(s.Data[BootstrapTokenExpirationKey])
	if raw == "" {
		return false
	}
	exp, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return true
	}
	return !now.Before(exp)
}
