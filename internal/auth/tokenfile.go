package auth

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// TokenAuthenticator checks one bearer token. It returns ok=false, and no
// error, for a token it does not know, so that several token sources (the
// token file, service-account tokens) can be asked in turn; the bearer
// authenticator turns "nobody knew it" into the 401. The returned User is
// the caller's to modify.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (u *User, ok bool, err error)
}

// ErrInvalidBearerToken is the error for a bearer token that no token
// authenticator recognised: the request carried credentials, and they are
// wrong, so it must not fall through to anonymous.
var ErrInvalidBearerToken = errors.New("invalid bearer token")

// BearerAuthenticator reads "Authorization: Bearer <token>" and asks its
// token authenticators, in order, who the token belongs to.
type BearerAuthenticator struct {
	tokens []TokenAuthenticator
}

// NewBearerAuthenticator returns an Authenticator over tokens.
func NewBearerAuthenticator(tokens ...TokenAuthenticator) *BearerAuthenticator {
	return &BearerAuthenticator{tokens: tokens}
}

// AuthenticateRequest implements Authenticator. Parsing follows upstream:
// the scheme is case-insensitive, an Authorization header of another scheme
// or with an empty token is ok=false (not ours), and a token nobody knows
// is ErrInvalidBearerToken. On success the Authorization header is removed
// from r, as upstream does, so that nothing later in the server (a proxy
// to a kubelet, a webhook call) can forward the caller's secret.
func (b *BearerAuthenticator) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil, false, nil
	}
	var errs []error
	for _, t := range b.tokens {
		u, ok, err := t.AuthenticateToken(r.Context(), token)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			r.Header.Del("Authorization")
			return u, true, nil
		}
	}
	if len(errs) > 0 {
		return nil, false, utilerrors.NewAggregate(errs)
	}
	return nil, false, ErrInvalidBearerToken
}

func bearerToken(header string) (string, bool) {
	header = strings.TrimSpace(header)
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	// "Bearer  x" (two spaces) is an empty token followed by junk, not "x":
	// upstream splits on single spaces, and so must we, or a token that
	// upstream rejects would be accepted here.
	token, _, _ := strings.Cut(rest, " ")
	return token, token != ""
}

// TokenFile is the static token list of --token-auth-file, loaded once at
// start-up. Its CSV format is upstream's:
//
//	token,user,uid,"group1,group2"
//
// one line per token, at least three columns (the group column is
// optional, and further columns are ignored). Two differences from
// upstream: lines starting with # are comments, and a token listed twice
// is an error where upstream only warns, because the second line would
// silently replace the first user.
type TokenFile struct {
	tokens map[string]*User
	bearer BearerAuthenticator
}

// LoadTokenFile reads and parses the token file at path.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	tf, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("token file %q: %w", path, err)
	}
	return tf, nil
}

// ParseTokenFile parses token-file content. Errors name the offending line
// but never the token, which is a secret.
func ParseTokenFile(r io.Reader) (*TokenFile, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // the group column is optional
	cr.Comment = '#'
	tokens := map[string]*User{}
	firstLine := map[string]int{}
	for {
		record, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err // *csv.ParseError, which names the line
		}
		line, _ := cr.FieldPos(0)
		if len(record) < 3 {
			return nil, fmt.Errorf("line %d: must have at least 3 columns (token, user name, user uid), found %d", line, len(record))
		}
		token := record[0]
		if token == "" {
			// Upstream skips these too: an empty bearer token is never
			// accepted, so the line can grant nothing.
			continue
		}
		if first, dup := firstLine[token]; dup {
			return nil, fmt.Errorf("line %d: duplicate token (first on line %d)", line, first)
		}
		firstLine[token] = line
		u := &User{Name: record[1], UID: record[2]}
		if len(record) >= 4 {
			for _, g := range strings.Split(record[3], ",") {
				// An empty group name ("a,,b" or an empty column) names
				// nothing RBAC could bind; drop it rather than carry "".
				if g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		tokens[token] = u
	}
	tf := &TokenFile{tokens: tokens}
	tf.bearer = BearerAuthenticator{tokens: []TokenAuthenticator{tf}}
	return tf, nil
}

// Len is the number of tokens loaded, for a start-up log line.
func (f *TokenFile) Len() int { return len(f.tokens) }

// AuthenticateToken implements TokenAuthenticator.
func (f *TokenFile) AuthenticateToken(_ context.Context, token string) (*User, bool, error) {
	u, ok := f.tokens[token]
	if !ok {
		return nil, false, nil
	}
	return u.DeepCopy(), true, nil
}

// AuthenticateRequest implements Authenticator on the Authorization header,
// so a TokenFile can go straight into the authenticator chain.
func (f *TokenFile) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	return f.bearer.AuthenticateRequest(r)
}
