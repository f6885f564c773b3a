package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeSecrets map[string]*corev1.Secret

func (f fakeSecrets) Secret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	if s, ok := f[namespace+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func tokenSecret(id, secret string, mutate func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-" + id},
		Type:       BootstrapTokenSecretType,
		Data: map[string][]byte{
			BootstrapTokenIDKey:        []byte(id),
			BootstrapTokenSecretKey:    []byte(secret),
			BootstrapTokenUsageAuthKey: []byte("true"),
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func TestBootstrapTokenAuthenticator(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	set := func(k, v string) func(*corev1.Secret) { return func(s *corev1.Secret) { s.Data[k] = []byte(v) } }
	secrets := fakeSecrets{}
	add := func(id string, mutate func(*corev1.Secret)) {
		s := tokenSecret(id, "0123456789abcdef", mutate)
		secrets[s.Namespace+"/"+s.Name] = s
	}
	add("aaaaaa", nil)
	add("bbbbbb", set(BootstrapTokenExtraGroupsKey, "system:bootstrappers:rudder:default-node-token, system:bootstrappers:x"))
	add("cccccc", set(BootstrapTokenExpirationKey, now.Add(-time.Second).Format(time.RFC3339)))
	add("dddddd", set(BootstrapTokenExpirationKey, now.Add(time.Hour).Format(time.RFC3339)))
	add("eeeeee", set(BootstrapTokenExpirationKey, "tomorrow"))
	add("ffffff", set(BootstrapTokenUsageAuthKey, "false"))
	add("gggggg", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque })
	add("hhhhhh", set(BootstrapTokenExtraGroupsKey, "system:masters"))
	add("iiiiii", func(s *corev1.Secret) { s.DeletionTimestamp = &metav1.Time{Time: now} })
	add("jjjjjj", set(BootstrapTokenIDKey, "zzzzzz"))
	a := NewBootstrapTokenAuthenticator(secrets, clocktesting.NewFakePassiveClock(now))

	tests := []struct {
		name    string
		token   string
		user    string
		groups  []string
		wantErr bool
	}{
		{name: "a valid token", token: "aaaaaa.0123456789abcdef", user: "system:bootstrap:aaaaaa", groups: []string{"system:bootstrappers"}},
		{name: "with extra groups", token: "bbbbbb.0123456789abcdef", user: "system:bootstrap:bbbbbb",
			groups: []string{"system:bootstrappers", "system:bootstrappers:rudder:default-node-token", "system:bootstrappers:x"}},
		{name: "not yet expired", token: "dddddd.0123456789abcdef", user: "system:bootstrap:dddddd", groups: []string{"system:bootstrappers"}},
		{name: "expired", token: "cccccc.0123456789abcdef"},
		{name: "unparsable expiration counts as expired", token: "eeeeee.0123456789abcdef"},
		{name: "not for authentication", token: "ffffff.0123456789abcdef"},
		{name: "a secret of another type", token: "gggggg.0123456789abcdef"},
		{name: "being deleted", token: "iiiiii.0123456789abcdef"},
		{name: "token-id disagrees with the name", token: "jjjjjj.0123456789abcdef"},
		{name: "wrong secret", token: "aaaaaa.0123456789abcdeg"},
		{name: "no such token", token: "zzzzzz.0123456789abcdef"},
		{name: "not the bootstrap form", token: "Aaaaaa.0123456789abcdef"},
		{name: "too short a secret", token: "aaaaaa.0123456789abcde"},
		{name: "a JWT", token: "eyJhbGciOi.eyJpc3MiOi.c2ln"},
		{name: "extra groups outside system:bootstrappers: are an error", token: "hhhhhh.0123456789abcdef", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := a.AuthenticateToken(context.Background(), tc.token)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if ok != (tc.user != "") {
				t.Fatalf("ok = %v, user %+v", ok, u)
			}
			if !ok {
				return
			}
			if u.Name != tc.user || !slices.Equal(u.Groups, tc.groups) {
				t.Errorf("user %q %v, want %q %v", u.Name, u.Groups, tc.user, tc.groups)
			}
		})
	}

	t.Run("through the bearer authenticator a bad token is a 401", func(t *testing.T) {
		chain := NewAuthenticator(AuthenticatorConfig{Authenticators: []Authenticator{NewBearerAuthenticator(a)}})
		for token, want := range map[string]bool{"aaaaaa.0123456789abcdef": true, "cccccc.0123456789abcdef": false, "aaaaaa.0123456789abcdeg": false} {
			r, _ := http.NewRequest(http.MethodGet, "/api", nil)
			r.Header.Set("Authorization", "Bearer "+token)
			u, ok, err := chain.AuthenticateRequest(r)
			if ok != want {
				t.Errorf("%s: ok = %v (%v)", token, ok, err)
			}
			if !want && !errors.Is(err, ErrInvalidBearerToken) {
				t.Errorf("%s: err = %v, want ErrInvalidBearerToken", token, err)
			}
			if want && !slices.Contains(u.Groups, AllAuthenticated) {
				t.Errorf("%s: groups %v lack system:authenticated", token, u.Groups)
			}
		}
	})
}

func TestParseBootstrapToken(t *testing.T) {
	for token, ok := range map[string]bool{
		"abcdef.0123456789abcdef": true, "abc123.aaaaaaaaaaaaaaaa": true,
		"abcdef.0123456789ABCDEF": false, "abcde.0123456789abcdef": false, "abcdef0123456789abcdef": false,
		"abcdef.0123456789abcdef0": false, " abcdef.0123456789abcdef": false, "": false,
	} {
		if _, _, got := ParseBootstrapToken(token); got != ok {
			t.Errorf("ParseBootstrapToken(%q) ok = %v, want %v", token, got, ok)
		}
	}
}
