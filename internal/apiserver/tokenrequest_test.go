package apiserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/clustertest"
)

const saIssuer = auth.DefaultServiceAccountIssuer

// tokenClaims is a token's payload as a relying party reads it.
type tokenClaims struct {
	Iss, Sub, Jti string
	Aud           []string
	Exp, Iat, Nbf int64
	Kubernetes    struct {
		Namespace      string
		ServiceAccount struct{ Name, UID string }
		Pod, Node      *struct{ Name, UID string }
	} `json:"kubernetes.io"`
}

func reviewClaims(t *testing.T, token string) tokenClaims {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// bearerClient is a client holding nothing but a bearer token.
func reviewBearerClient(t *testing.T, cfg *rest.Config, token string) kubernetes.Interface {
	t.Helper()
	rc := rest.AnonymousClientConfig(cfg)
	rc.BearerToken = token
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestTokenRequestAndReview(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	core := c.Client.CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa, err := core.ServiceAccounts("ns").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := core.Pods("ns").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "bot", NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	request := func(name string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error) {
		return core.ServiceAccounts("ns").CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	}
	review := func(token string, auds ...string) authenticationv1.TokenReviewStatus {
		t.Helper()
		tr, err := c.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status
	}

	before := time.Now().Truncate(time.Second)
	plain, err := request("bot", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("defaults and claims", func(t *testing.T) {
		if plain.Name != "bot" || plain.Namespace != "ns" || *plain.Spec.ExpirationSeconds != 3600 || !slices.Equal(plain.Spec.Audiences, []string{saIssuer}) {
			t.Errorf("request not defaulted as upstream: %+v", plain)
		}
		if exp := plain.Status.ExpirationTimestamp.Time; exp.Before(before.Add(time.Hour)) || exp.After(time.Now().Add(time.Hour+time.Second)) {
			t.Errorf("expirationTimestamp %v, want an hour from now", exp)
		}
		cl := reviewClaims(t, plain.Status.Token)
		if cl.Iss != saIssuer || cl.Sub != "system:serviceaccount:ns:bot" || !slices.Equal(cl.Aud, []string{saIssuer}) ||
			cl.Exp-cl.Iat != 3600 || cl.Nbf != cl.Iat || cl.Jti == "" || cl.Kubernetes.Namespace != "ns" ||
			cl.Kubernetes.ServiceAccount.Name != "bot" || cl.Kubernetes.ServiceAccount.UID != string(sa.UID) || cl.Kubernetes.Pod != nil {
			t.Errorf("claims %+v", cl)
		}
		if cl.Exp != plain.Status.ExpirationTimestamp.Unix() {
			t.Errorf("exp %d, status says %d", cl.Exp, plain.Status.ExpirationTimestamp.Unix())
		}
	})

	t.Run("token authenticates as the service account", func(t *testing.T) {
		as := reviewBearerClient(t, c.Config, plain.Status.Token)
		ssr, err := as.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u := ssr.Status.UserInfo
		if u.Username != "system:serviceaccount:ns:bot" || u.UID != string(sa.UID) ||
			!slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"}) ||
			len(u.Extra["authentication.kubernetes.io/credential-id"]) != 1 {
			t.Errorf("user %+v", u)
		}
		if _, err := as.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("list pods with no grant: %v, want 403", err)
		}
		st := review(plain.Status.Token)
		if !st.Authenticated || st.Error != "" || st.User.Username != u.Username || !slices.Equal(st.Audiences, []string{saIssuer}) {
			t.Errorf("token review %+v", st)
		}
	})

	t.Run("audiences", func(t *testing.T) {
		vault, err := request("bot", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
		if err != nil {
			t.Fatal(err)
		}
		if st := review(vault.Status.Token, "vault", "other"); !st.Authenticated || !slices.Equal(st.Audiences, []string{"vault"}) {
			t.Errorf("review for vault: %+v", st)
		}
		st := review(vault.Status.Token)
		if st.Authenticated || st.Error != `token audiences ["vault"] is invalid for the target audiences ["`+saIssuer+`"]` {
			t.Errorf("review for the API: %+v", st)
		}
		if _, err := reviewBearerClient(t, c.Config, vault.Status.Token).CoreV1().Namespaces().Get(ctx, "ns", metav1.GetOptions{}); !apierrors.IsUnauthorized(err) {
			t.Errorf("a vault token used on the API: %v, want 401", err)
		}
		if st := review("not-a-token"); st.Authenticated || st.Error != "invalid bearer token" {
			t.Errorf("review of garbage: %+v", st)
		}
	})

	t.Run("request errors", func(t *testing.T) {
		sixty := int64(60)
		cases := []struct {
			name     string
			sa       string
			spec     authenticationv1.TokenRequestSpec
			wantCode int32
			wantMsg  string
		}{
			{"too short", "bot", authenticationv1.TokenRequestSpec{ExpirationSeconds: &sixty}, 422,
				`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes`},
			{"no such service account", "nobody", authenticationv1.TokenRequestSpec{}, 404, `serviceaccounts "nobody" not found`},
			{"bound pod is gone", "bot", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "gone"}},
				404, `pods "gone" not found`},
			{"bound pod was recreated", "bot", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
				Kind: "Pod", APIVersion: "v1", Name: "web", UID: types.UID("old")}}, 409,
				`Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated`},
			{"pod of another account", "default", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"}},
				400, `cannot bind token for serviceaccount "default" to pod running with different serviceaccount name.`},
			{"unsupported kind", "bot", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Name: "d"}},
				400, `cannot bind token for serviceaccount "bot" to object of type apps/v1, Kind=Deployment`},
		}
		if _, err := core.ServiceAccounts("ns").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := request(tc.sa, tc.spec)
				var se apierrors.APIStatus
				if !errors.As(err, &se) || se.Status().Code != tc.wantCode || se.Status().Message != tc.wantMsg {
					t.Fatalf("err = %v, want %d %q", err, tc.wantCode, tc.wantMsg)
				}
			})
		}
	})

	t.Run("pod-bound token dies with its pod", func(t *testing.T) {
		bound, err := request("bot", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID}})
		if err != nil {
			t.Fatal(err)
		}
		cl := reviewClaims(t, bound.Status.Token)
		if cl.Kubernetes.Pod == nil || cl.Kubernetes.Pod.UID != string(pod.UID) || cl.Kubernetes.Node == nil || cl.Kubernetes.Node.UID != string(node.UID) {
			t.Fatalf("pod-bound claims %+v", cl.Kubernetes)
		}
		st := review(bound.Status.Token)
		want := map[string]string{"pod-name": "web", "pod-uid": string(pod.UID), "node-name": "n1", "node-uid": string(node.UID)}
		for k, v := range want {
			if got := st.User.Extra["authentication.kubernetes.io/"+k]; len(got) != 1 || got[0] != v {
				t.Errorf("extra %s = %v, want %s", k, got, v)
			}
		}
		zero := int64(0)
		if err := core.Pods("ns").Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		reviewWaitFor(t, func() bool { return !review(bound.Status.Token).Authenticated })
		if st := review(bound.Status.Token); st.Error != "service account token has been invalidated" {
			t.Errorf("after pod deletion: %+v", st)
		}
		if _, err := reviewBearerClient(t, c.Config, bound.Status.Token).AuthenticationV1().SelfSubjectReviews().Create(ctx,
			&authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); !apierrors.IsUnauthorized(err) {
			t.Errorf("request with the dead token: %v, want 401", err)
		}
	})

	t.Run("token dies with its service account", func(t *testing.T) {
		if err := core.ServiceAccounts("ns").Delete(ctx, "bot", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		reviewWaitFor(t, func() bool { return !review(plain.Status.Token).Authenticated })
		if st := review(plain.Status.Token); st.Error != `serviceaccounts "bot" not found` {
			t.Errorf("after deletion: %+v", st)
		}
		// A new account of the same name is another account.
		if _, err := core.ServiceAccounts("ns").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		reviewWaitFor(t, func() bool { return strings.HasPrefix(review(plain.Status.Token).Error, "service account UID (") })
	})
}

func reviewWaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKubectlCreateTokenAndDiscovery: `kubectl create token` prints a
// token that authenticates as the account, and a relying party that
// knows only the issuer discovery documents can verify it.
func TestKubectlCreateTokenAndDiscovery(t *testing.T) {
	reviewKubectlBin(t)
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kc := c.Server.Kubeconfig
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, code := reviewKubectl(t, kc, "create", "token", "default", "-n", "ns"); code != 1 || out != "" {
		t.Errorf("token for a missing account: %q exit %d", out, code)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts("ns").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, code := reviewKubectl(t, kc, "create", "token", "default", "-n", "ns")
	if code != 0 {
		t.Fatalf("kubectl create token: exit %d", code)
	}
	token := strings.TrimSpace(out)

	as := reviewBearerClient(t, c.Config, token)
	ssr, err := as.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := ssr.Status.UserInfo; u.Username != "system:serviceaccount:ns:default" ||
		!slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"}) {
		t.Errorf("token user %+v", u)
	}

	out, code = reviewKubectl(t, kc, "create", "token", "default", "-n", "ns", "--duration=20m", "--audience=vault")
	if cl := reviewClaims(t, strings.TrimSpace(out)); code != 0 || cl.Exp-cl.Iat != 1200 || !slices.Equal(cl.Aud, []string{"vault"}) {
		t.Errorf("--duration/--audience: exit %d, claims %+v", code, cl)
	}

	t.Run("discovery verifies the token", func(t *testing.T) {
		// Service accounts may read the documents (the bootstrap policy's
		// issuer-discovery binding); other users may not.
		raw, err := as.CoreV1().RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Issuer        string   `json:"issuer"`
			JWKSURI       string   `json:"jwks_uri"`
			ResponseTypes []string `json:"response_types_supported"`
			SubjectTypes  []string `json:"subject_types_supported"`
			Algs          []string `json:"id_token_signing_alg_values_supported"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Issuer != saIssuer || doc.JWKSURI != c.Server.URL+"/openid/v1/jwks" || !slices.Equal(doc.ResponseTypes, []string{"id_token"}) ||
			!slices.Equal(doc.SubjectTypes, []string{"public"}) || !slices.Equal(doc.Algs, []string{"ES256"}) {
			t.Errorf("discovery document %s", raw)
		}
		// Fetch the JWKS where the document says, as a relying party does.
		rc := rest.AnonymousClientConfig(c.Config)
		rc.BearerToken = token
		hc, err := rest.HTTPClientFor(rc)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get(doc.JWKSURI)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/jwk-set+json" || resp.Header.Get("Cache-Control") != "public, max-age=3600" {
			t.Fatalf("jwks: %d %v", resp.StatusCode, resp.Header)
		}
		var set struct {
			Keys []struct{ Use, Kty, Kid, Crv, Alg, X, Y string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(token, ".")
		hdr, _ := base64.RawURLEncoding.DecodeString(parts[0])
		var h struct{ Alg, Kid string }
		json.Unmarshal(hdr, &h)
		verified := false
		for _, k := range set.Keys {
			if k.Kid != h.Kid {
				continue
			}
			if k.Use != "sig" || k.Kty != "EC" || k.Crv != "P-256" || k.Alg != "ES256" {
				t.Errorf("key %+v", k)
			}
			x, _ := base64.RawURLEncoding.DecodeString(k.X)
			y, _ := base64.RawURLEncoding.DecodeString(k.Y)
			pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
			tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
			if err != nil {
				t.Fatal(err)
			}
			var claims jwt.Claims
			if err := tok.Claims(pub, &claims); err != nil {
				t.Fatalf("signature does not verify with the published key: %v", err)
			}
			verified = true
		}
		if !verified {
			t.Fatalf("no key %q in %+v", h.Kid, set)
		}

		jane := reviewAs(t, c.Config, "jane", nil)
		if err := jane.CoreV1().RESTClient().Get().AbsPath("/openid/v1/jwks").Do(ctx).Error(); !apierrors.IsForbidden(err) {
			t.Errorf("jane reads the JWKS: %v, want 403", err)
		}
	})
}
