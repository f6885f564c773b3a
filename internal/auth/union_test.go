package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// staticAuthenticator answers every request the same way.
type staticAuthenticator struct {
	u   *User
	ok  bool
	err error
}

func (s staticAuthenticator) AuthenticateRequest(*http.Request) (*User, bool, error) {
	return s.u, s.ok, s.err
}

func TestUnionAuthenticator(t *testing.T) {
	errBad := errors.New("bad credentials")
	shared := &User{Name: "alice", Groups: []string{"devs"}}
	none := staticAuthenticator{}
	bad := staticAuthenticator{err: errBad}
	alice := staticAuthenticator{u: shared, ok: true}

	tests := []struct {
		name    string
		cfg     AuthenticatorConfig
		path    string
		want    *User
		wantErr error
	}{
		{"first ok wins and gets system:authenticated",
			AuthenticatorConfig{Authenticators: []Authenticator{none, alice}}, "/api",
			&User{Name: "alice", Groups: []string{"devs", AllAuthenticated}}, nil},
		{"success after an error still wins",
			AuthenticatorConfig{Authenticators: []Authenticator{bad, alice}}, "/api",
			&User{Name: "alice", Groups: []string{"devs", AllAuthenticated}}, nil},
		{"error and no success is an error",
			AuthenticatorConfig{Authenticators: []Authenticator{none, bad}}, "/api", nil, errBad},
		{"bad credentials are never anonymous",
			AuthenticatorConfig{Authenticators: []Authenticator{bad}, Anonymous: true}, "/api", nil, errBad},
		{"no credentials and anonymous off",
			AuthenticatorConfig{Authenticators: []Authenticator{none}}, "/api", nil, nil},
		{"no credentials and anonymous on",
			AuthenticatorConfig{Authenticators: []Authenticator{none}, Anonymous: true}, "/api",
			&User{Name: Anonymous, Groups: []string{AllUnauthenticated}}, nil},
		{"anonymous limited to listed paths: listed",
			AuthenticatorConfig{Anonymous: true, AnonymousPaths: []string{"/healthz", "/readyz"}}, "/readyz",
			&User{Name: Anonymous, Groups: []string{AllUnauthenticated}}, nil},
		{"anonymous limited to listed paths: not listed",
			AuthenticatorConfig{Anonymous: true, AnonymousPaths: []string{"/healthz"}}, "/api", nil, nil},
		{"authenticated group not added twice",
			AuthenticatorConfig{Authenticators: []Authenticator{staticAuthenticator{u: &User{Name: "x", Groups: []string{AllAuthenticated}}, ok: true}}}, "/",
			&User{Name: "x", Groups: []string{AllAuthenticated}}, nil},
		{"system:anonymous from an authenticator gets no authenticated group",
			AuthenticatorConfig{Authenticators: []Authenticator{staticAuthenticator{u: &User{Name: Anonymous}, ok: true}}}, "/",
			&User{Name: Anonymous}, nil},
		{"unauthenticated member gets no authenticated group",
			AuthenticatorConfig{Authenticators: []Authenticator{staticAuthenticator{u: &User{Name: "y", Groups: []string{AllUnauthenticated}}, ok: true}}}, "/",
			&User{Name: "y", Groups: []string{AllUnauthenticated}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := NewAuthenticator(tc.cfg).AuthenticateRequest(httptest.NewRequest("GET", tc.path, nil))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if ok != (tc.want != nil) || !reflect.DeepEqual(u, tc.want) {
				t.Fatalf("got (%+v, %v), want %+v", u, ok, tc.want)
			}
		})
	}
	if len(shared.Groups) != 1 {
		t.Errorf("the union modified the authenticator's user: %v", shared.Groups)
	}
}
