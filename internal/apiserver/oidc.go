package apiserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"

	"github.com/rudder-dev/rudder/internal/auth"
)

// Service-account issuer discovery: the two documents that let anyone
// verify service-account tokens without asking the API server, as an OIDC
// relying party would (cloud identity federation, Vault, SPIFFE). The
// discovery document names the issuer and where its keys are; the JWKS
// lists the public keys by the "kid" the tokens carry. Who may read them
// is RBAC's call (nonResourceURLs): the bootstrap policy lets every
// service account read them, as upstream's does.
const (
	oidcConfigPath   = "/.well-known/openid-configuration"
	jwksPath         = "/openid/v1/jwks"
	oidcCacheControl = "public, max-age=3600"
)

// oidcConfig is the OIDC provider metadata upstream serves, field for
// field and in its order.
type oidcConfig struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// oidcJWK is one public key of the JWKS, with the members in the order
// upstream's JOSE library writes them.
type oidcJWK struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv,omitempty"`
	Alg string `json:"alg"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
}

// oidcDocuments builds both documents, or says why issuer cannot be
// published: OIDC requires an https issuer with no query or fragment, and
// a jwks_uri that is https too.
func oidcDocuments(issuer, jwksURI, externalAddress string, keys []crypto.PublicKey) (config, jwks []byte, err error) {
	iss, err := url.Parse(issuer)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("issuer URL is invalid: %w", err)
	case iss.Scheme != "https":
		return nil, nil, errors.New("issuer URL must use https scheme")
	case iss.RawQuery != "":
		return nil, nil, errors.New("issuer URL may not include a query")
	case iss.Fragment != "":
		return nil, nil, errors.New("issuer URL may not include a fragment")
	case len(keys) == 0:
		return nil, nil, errors.New("no keys provided for validating keyset")
	}
	if jwksURI == "" {
		if externalAddress == "" {
			return nil, nil, errors.New("either the JWKS URI or the default external address, or both, must be set")
		}
		jwksURI = (&url.URL{Scheme: "https", Host: externalAddress, Path: jwksPath}).String()
	} else if u, err := url.Parse(jwksURI); err != nil || u.Scheme != "https" {
		return nil, nil, fmt.Errorf("jwks_uri requires https scheme, parsed as: %v", jwksURI)
	}
	set := struct {
		Keys []oidcJWK `json:"keys"`
	}{Keys: []oidcJWK{}}
	var algs []string
	for _, k := range keys {
		key, err := publicJWK(k)
		if err != nil {
			return nil, nil, err
		}
		set.Keys = append(set.Keys, key)
		if !slices.Contains(algs, key.Alg) {
			algs = append(algs, key.Alg)
		}
	}
	slices.Sort(algs)
	config, err = json.Marshal(oidcConfig{Issuer: issuer, JWKSURI: jwksURI, ResponseTypes: []string{"id_token"},
		SubjectTypes: []string{"public"}, SigningAlgs: algs})
	if err != nil {
		return nil, nil, err
	}
	jwks, err = json.Marshal(set)
	return config, jwks, err
}

func publicJWK(pub crypto.PublicKey) (oidcJWK, error) {
	alg, err := auth.SigningAlgorithm(pub)
	if err != nil {
		return oidcJWK{}, err
	}
	kid, err := auth.KeyID(pub)
	if err != nil {
		return oidcJWK{}, err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	k := oidcJWK{Use: "sig", Kid: kid, Alg: alg}
	switch p := pub.(type) {
	case *rsa.PublicKey:
		k.Kty, k.N, k.E = "RSA", b64(p.N.Bytes()), b64(big.NewInt(int64(p.E)).Bytes())
	case *ecdsa.PublicKey:
		// Coordinates are fixed-size, left-padded to the curve's byte
		// length (RFC 7518 §6.2.1.2).
		size := (p.Curve.Params().BitSize + 7) / 8
		x, y := make([]byte, size), make([]byte, size)
		p.X.FillBytes(x)
		p.Y.FillBytes(y)
		k.Kty, k.Crv, k.X, k.Y = "EC", p.Curve.Params().Name, b64(x), b64(y)
	}
	return k, nil
}

// serveOIDC serves the discovery document or the JWKS; 404 when the
// server issues no tokens or its issuer cannot be published.
func (s *Server) serveOIDC(w http.ResponseWriter, r *http.Request, path string) {
	t := s.saTokens
	if t == nil || t.oidcConfig == nil {
		s.writeError(w, r, notFound())
		return
	}
	w.Header().Set("Cache-Control", oidcCacheControl)
	if path == oidcConfigPath {
		writeBytes(w, http.StatusOK, mediaJSON, t.oidcConfig)
		return
	}
	writeBytes(w, http.StatusOK, "application/jwk-set+json", t.jwks)
}
