package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// tokenObjects is an in-memory ServiceAccountObjects: the objects a test
// cluster holds, keyed by namespace/name (nodes by name).
type tokenObjects struct {
	sas     map[string]*corev1.ServiceAccount
	pods    map[string]*corev1.Pod
	secrets map[string]*corev1.Secret
	nodes   map[string]*corev1.Node
}

func get[T any](m map[string]T, resource, key, name string) (T, error) {
	if o, ok := m[key]; ok {
		return o, nil
	}
	var zero T
	return zero, apierrors.NewNotFound(corev1.Resource(resource), name)
}

func (o *tokenObjects) ServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	return get(o.sas, "serviceaccounts", ns+"/"+name, name)
}
func (o *tokenObjects) Pod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	return get(o.pods, "pods", ns+"/"+name, name)
}
func (o *tokenObjects) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	return get(o.secrets, "secrets", ns+"/"+name, name)
}
func (o *tokenObjects) Node(_ context.Context, name string) (*corev1.Node, error) {
	return get(o.nodes, "nodes", name, name)
}

func meta(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

func newTokenObjects() *tokenObjects {
	return &tokenObjects{
		sas: map[string]*corev1.ServiceAccount{"ns/app": {ObjectMeta: meta("ns", "app", "sa-uid")}},
		pods: map[string]*corev1.Pod{"ns/web": {ObjectMeta: meta("ns", "web", "pod-uid"),
			Spec: corev1.PodSpec{ServiceAccountName: "app", NodeName: "n1"}}},
		secrets: map[string]*corev1.Secret{"ns/s": {ObjectMeta: meta("ns", "s", "secret-uid")}},
		nodes:   map[string]*corev1.Node{"n1": {ObjectMeta: meta("", "n1", "node-uid")}},
	}
}

const testIssuer = "https://kubernetes.default.svc.cluster.local"

var testStart = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func ecKey(t *testing.T) crypto.Signer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// issue signs a token for ns/app bound as given, valid for an hour from
// testStart, for the API audience unless auds says otherwise.
func issue(t *testing.T, key crypto.Signer, objs *tokenObjects, bound BoundObjects, auds ...string) string {
	t.Helper()
	if len(auds) == 0 {
		auds = []string{testIssuer}
	}
	iss, err := NewTokenIssuer(testIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewServiceAccountClaims(objs.sas["ns/app"], bound, auds, testStart, 3600, 0)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := iss.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func decodeSegment(t *testing.T, seg string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTokenWireFormat checks the token is upstream's byte for byte in
// shape: header with alg and kid only, payload keys sorted at every
// level, aud always an array, times in whole seconds.
func TestTokenWireFormat(t *testing.T) {
	key := ecKey(t)
	objs := newTokenObjects()
	pod := objs.pods["ns/web"]
	tok := issue(t, key, objs, BoundObjects{Pod: pod, Node: objs.nodes["n1"]})
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	kid, _ := KeyID(key.Public())
	if got, want := decodeSegment(t, parts[0]), `{"alg":"ES256","kid":"`+kid+`"}`; got != want {
		t.Errorf("header = %s, want %s", got, want)
	}
	payload := decodeSegment(t, parts[1])
	var claims map[string]any
	if err := json.Unmarshal([]byte(payload), &claims); err != nil {
		t.Fatal(err)
	}
	jti, _ := claims["jti"].(string)
	if len(jti) != 36 {
		t.Errorf("jti = %q, want a UUID", jti)
	}
	now, exp := strconv.FormatInt(testStart.Unix(), 10), strconv.FormatInt(testStart.Unix()+3600, 10)
	want := `{"aud":["` + testIssuer + `"],"exp":` + exp + `,"iat":` + now + `,"iss":"` + testIssuer + `","jti":"` + jti +
		`","kubernetes.io":{"namespace":"ns","node":{"name":"n1","uid":"node-uid"},"pod":{"name":"web","uid":"pod-uid"},` +
		`"serviceaccount":{"name":"app","uid":"sa-uid"}},"nbf":` + now + `,"sub":"system:serviceaccount:ns:app"}`
	if payload != want {
		t.Errorf("payload\n got %s\nwant %s", payload, want)
	}
	if _, err := NewServiceAccountClaims(objs.sas["ns/app"], BoundObjects{Pod: pod, Secret: objs.secrets["ns/s"]}, nil, testStart, 3600, 0); err == nil {
		t.Error("a token bound to a pod and a secret was built")
	}
}

func TestServiceAccountTokenAuthenticator(t *testing.T) {
	key, otherKey := ecKey(t), ecKey(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	objs := newTokenObjects()
	pod, secret, node := objs.pods["ns/web"], objs.secrets["ns/s"], objs.nodes["n1"]
	plain := issue(t, key, objs, BoundObjects{})

	otherIssuer, _ := NewTokenIssuer("https://elsewhere", key)
	otherClaims, _ := NewServiceAccountClaims(objs.sas["ns/app"], BoundObjects{}, []string{testIssuer}, testStart, 3600, 0)
	foreign, _ := otherIssuer.Sign(otherClaims)

	type tc struct {
		name      string
		token     string
		at        time.Time // default testStart + 1 min
		audiences []string  // asked for via WithAudiences; nil: API audiences
		mutate    func(o *tokenObjects)
		wantOK    bool
		wantErr   string // substring; "" with !wantOK means "not ours"
		wantUser  *User
		wantAuds  []string
	}
	saUser := func(extra map[string][]string) *User {
		return &User{Name: "system:serviceaccount:ns:app", UID: "sa-uid",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns"}, Extra: extra}
	}
	cases := []tc{
		{name: "valid token", token: plain, wantOK: true, wantUser: saUser(nil), wantAuds: []string{testIssuer}},
		{name: "signed with RSA", token: issue(t, rsaKey, objs, BoundObjects{}), wantOK: true, wantUser: saUser(nil)},
		{name: "pod-bound token names pod and node", token: issue(t, key, objs, BoundObjects{Pod: pod, Node: node}), wantOK: true,
			wantUser: saUser(map[string][]string{PodNameExtraKey: {"web"}, PodUIDExtraKey: {"pod-uid"},
				NodeNameExtraKey: {"n1"}, NodeUIDExtraKey: {"node-uid"}})},
		{name: "asked-for audience the token has", token: issue(t, key, objs, BoundObjects{}, "vault", testIssuer),
			audiences: []string{"vault"}, wantOK: true, wantUser: saUser(nil), wantAuds: []string{"vault"}},
		{name: "wrong audience", token: issue(t, key, objs, BoundObjects{}, "vault"),
			wantErr: `token audiences ["vault"] is invalid for the target audiences ["` + testIssuer + `"]`},
		{name: "expired", token: plain, at: testStart.Add(time.Hour + 2*time.Minute), wantErr: "service account token has expired"},
		{name: "expired within leeway still works", token: plain, at: testStart.Add(time.Hour + 30*time.Second), wantOK: true, wantUser: saUser(nil)},
		{name: "not valid yet", token: plain, at: testStart.Add(-2 * time.Minute), wantErr: "service account token is not valid yet"},
		{name: "service account deleted", token: plain, mutate: func(o *tokenObjects) { delete(o.sas, "ns/app") },
			wantErr: `serviceaccounts "app" not found`},
		{name: "service account recreated", token: plain,
			mutate: func(o *tokenObjects) {
				o.sas["ns/app"] = &corev1.ServiceAccount{ObjectMeta: meta("ns", "app", "new-uid")}
			},
			wantErr: "service account UID (new-uid) does not match claim (sa-uid)"},
		{name: "service account deleted minutes ago", token: plain,
			mutate: func(o *tokenObjects) {
				sa := o.sas["ns/app"].DeepCopy()
				sa.DeletionTimestamp = &metav1.Time{Time: testStart.Add(-5 * time.Minute)}
				o.sas["ns/app"] = sa
			},
			wantErr: "service account ns/app has been deleted"},
		{name: "bound pod deleted", token: issue(t, key, objs, BoundObjects{Pod: pod}),
			mutate: func(o *tokenObjects) { delete(o.pods, "ns/web") }, wantErr: "service account token has been invalidated"},
		{name: "bound pod recreated", token: issue(t, key, objs, BoundObjects{Pod: pod}),
			mutate: func(o *tokenObjects) {
				o.pods["ns/web"] = &corev1.Pod{ObjectMeta: meta("ns", "web", "pod-2")}
			},
			wantErr: "pod UID (pod-2) does not match service account pod ref claim (pod-uid)"},
		{name: "bound secret deleted", token: issue(t, key, objs, BoundObjects{Secret: secret}),
			mutate: func(o *tokenObjects) { delete(o.secrets, "ns/s") }, wantErr: "service account token has been invalidated"},
		{name: "bound node deleted", token: issue(t, key, objs, BoundObjects{Node: node}),
			mutate: func(o *tokenObjects) { delete(o.nodes, "n1") }, wantErr: "service account token has been invalidated"},
		{name: "pod-bound token outlives its node", token: issue(t, key, objs, BoundObjects{Pod: pod, Node: node}),
			mutate: func(o *tokenObjects) { delete(o.nodes, "n1") }, wantOK: true,
			wantUser: saUser(map[string][]string{PodNameExtraKey: {"web"}, PodUIDExtraKey: {"pod-uid"},
				NodeNameExtraKey: {"n1"}, NodeUIDExtraKey: {"node-uid"}})},
		{name: "signed by another key", token: issue(t, otherKey, objs, BoundObjects{}), wantErr: "go-jose/go-jose: error in cryptographic primitive"},
		{name: "tampered payload", token: tamper(plain), wantErr: "error in cryptographic primitive"},
		{name: "another issuer's token is not ours", token: foreign},
		{name: "not a JWT is not ours", token: "abcdef.123456"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := newTokenObjects()
			if c.mutate != nil {
				c.mutate(o)
			}
			at := c.at
			if at.IsZero() {
				at = testStart.Add(time.Minute)
			}
			a, err := NewServiceAccountTokenAuthenticator(ServiceAccountTokenConfig{
				Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{key.Public(), rsaKey.Public()},
				APIAudiences: []string{testIssuer}, Objects: o, Clock: clocktesting.NewFakePassiveClock(at),
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := WithAudiences(context.Background(), []string{testIssuer})
			if c.audiences != nil {
				ctx = WithAudiences(context.Background(), c.audiences)
			}
			u, ok, err := a.AuthenticateToken(ctx, c.token)
			if ok != c.wantOK {
				t.Fatalf("ok = %v (err %v), want %v", ok, err, c.wantOK)
			}
			switch {
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			}
			if !c.wantOK {
				if u != nil {
					t.Errorf("user %+v returned with ok=false", u)
				}
				return
			}
			if c.wantUser != nil {
				if _, ok := u.Extra[CredentialIDExtraKey]; !ok || !strings.HasPrefix(u.Extra[CredentialIDExtraKey][0], "JTI=") {
					t.Errorf("credential-id extra = %v", u.Extra[CredentialIDExtraKey])
				}
				delete(u.Extra, CredentialIDExtraKey)
				if len(u.Extra) == 0 {
					u.Extra = nil
				}
				if !userEqual(u, c.wantUser) {
					t.Errorf("user = %+v, want %+v", u, c.wantUser)
				}
			}
			if c.wantAuds != nil && !slices.Equal(AuthenticatedAudiences(ctx), c.wantAuds) {
				t.Errorf("audiences = %v, want %v", AuthenticatedAudiences(ctx), c.wantAuds)
			}
		})
	}
}

func userEqual(a, b *User) bool {
	if a.Name != b.Name || a.UID != b.UID || !slices.Equal(a.Groups, b.Groups) || len(a.Extra) != len(b.Extra) {
		return false
	}
	for k, v := range a.Extra {
		if !slices.Equal(v, b.Extra[k]) {
			return false
		}
	}
	return true
}

// tamper changes the subject in the payload, keeping the signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	p, _ := base64.RawURLEncoding.DecodeString(parts[1])
	p = []byte(strings.Replace(string(p), "ns:app", "ns:adm", 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(p)
	return strings.Join(parts, ".")
}

// TestAudienceAgnostic: a static token counts as meant for the API
// server only.
func TestAudienceAgnostic(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader("secret-token,alice,uid-1\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := AudienceAgnostic([]string{"api"}, tf)
	cases := []struct {
		name     string
		ctx      context.Context
		wantOK   bool
		wantAuds []string
	}{
		{"no audiences asked", context.Background(), true, nil},
		{"API audience asked", WithAudiences(context.Background(), []string{"other", "api"}), true, []string{"api"}},
		{"another audience asked", WithAudiences(context.Background(), []string{"other"}), false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, ok, err := a.AuthenticateToken(c.ctx, "secret-token")
			if err != nil || ok != c.wantOK {
				t.Fatalf("ok=%v err=%v, want ok=%v", ok, err, c.wantOK)
			}
			if ok && u.Name != "alice" {
				t.Errorf("user %q", u.Name)
			}
			if got := AuthenticatedAudiences(c.ctx); !slices.Equal(got, c.wantAuds) {
				t.Errorf("audiences %v, want %v", got, c.wantAuds)
			}
		})
	}
}

// TestBearerChainWithServiceAccountTokens: behind the bearer
// authenticator, a bad service-account token is a 401 with the
// validator's reason, and a good one authenticates.
func TestBearerChainWithServiceAccountTokens(t *testing.T) {
	key := ecKey(t)
	objs := newTokenObjects()
	sa, err := NewServiceAccountTokenAuthenticator(ServiceAccountTokenConfig{
		Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{key.Public()}, APIAudiences: []string{testIssuer},
		Objects: objs, Clock: clocktesting.NewFakePassiveClock(testStart),
	})
	if err != nil {
		t.Fatal(err)
	}
	authn := NewAuthenticator(AuthenticatorConfig{Authenticators: []Authenticator{NewBearerAuthenticator(sa)}})
	tok := issue(t, key, objs, BoundObjects{})
	for _, c := range []struct {
		name, token, wantErr, wantUser string
	}{
		{"good token", tok, "", "system:serviceaccount:ns:app"},
		{"unknown token", "nope", "invalid bearer token", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			r.Header.Set("Authorization", "Bearer "+c.token)
			u, ok, err := authn.AuthenticateRequest(r)
			if c.wantErr != "" {
				if ok || err == nil || err.Error() != c.wantErr {
					t.Fatalf("ok=%v err=%v, want %q", ok, err, c.wantErr)
				}
				return
			}
			if !ok || err != nil || u.Name != c.wantUser || !u.InGroup(AllAuthenticated) {
				t.Fatalf("ok=%v err=%v user=%+v", ok, err, u)
			}
		})
	}
}
