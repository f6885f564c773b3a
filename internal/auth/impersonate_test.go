package auth

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestImpersonate(t *testing.T) {
	src := newFakeRBAC().
		addClusterRole("impersonate-jane", rbacv1.PolicyRule{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"jane"}}).
		addClusterRole("impersonate-devs", rbacv1.PolicyRule{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"groups"}, ResourceNames: []string{"devs", AllAuthenticated, AllUnauthenticated}}).
		addClusterRole("impersonate-uids", rule("impersonate", "authentication.k8s.io", "uids")).
		addClusterRole("impersonate-scopes", rule("impersonate", "authentication.k8s.io", "userextras/scopes userextras/example.com/team")).
		addClusterRole("impersonate-anonymous", rbacv1.PolicyRule{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{Anonymous}}).
		addClusterRole("impersonate-everyone", rule("impersonate", "core authentication.k8s.io", "users groups serviceaccounts uids userextras/*")).
		bind("", "bob", "ClusterRole", "impersonate-jane", userSubject("bob")).
		bind("", "bob-devs", "ClusterRole", "impersonate-devs", userSubject("bob")).
		bind("", "bob-uids", "ClusterRole", "impersonate-uids", userSubject("bob")).
		bind("", "bob-scopes", "ClusterRole", "impersonate-scopes", userSubject("bob")).
		bind("", "bob-anon", "ClusterRole", "impersonate-anonymous", userSubject("bob")).
		bind("", "root", "ClusterRole", "impersonate-everyone", userSubject("root"))
	src.addClusterRole("edit-like", rbacv1.PolicyRule{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts"}})
	src.bind("team", "ci", "ClusterRole", "edit-like", userSubject("ci"))
	az := NewRBACAuthorizer(src)

	bob := &User{Name: "bob", Groups: []string{AllAuthenticated}}
	root := &User{Name: "root", Groups: []string{AllAuthenticated}}
	ci := &User{Name: "ci", Groups: []string{AllAuthenticated}}

	tests := []struct {
		name      string
		requestor *User
		h         http.Header
		want      *User
		wantErr   string // exact message; "" means success
		wantCode  int32
	}{
		{"no headers returns the requestor", bob, headers(), bob, "", 0},
		{"user", bob, headers("Impersonate-User", "jane"),
			&User{Name: "jane", Groups: []string{AllAuthenticated}}, "", 0},
		{"user with group and uid", bob, headers("Impersonate-User", "jane", "Impersonate-Group", "devs", "Impersonate-Uid", "1234"),
			&User{Name: "jane", UID: "1234", Groups: []string{"devs", AllAuthenticated}}, "", 0},
		{"requested system:authenticated is not doubled", bob, headers("Impersonate-User", "jane", "Impersonate-Group", AllAuthenticated),
			&User{Name: "jane", Groups: []string{AllAuthenticated}}, "", 0},
		{"requested system:unauthenticated suppresses system:authenticated", bob, headers("Impersonate-User", "jane", "Impersonate-Group", AllUnauthenticated),
			&User{Name: "jane", Groups: []string{AllUnauthenticated}}, "", 0},
		{"anonymous gets system:unauthenticated", bob, headers("Impersonate-User", Anonymous),
			&User{Name: Anonymous, Groups: []string{AllUnauthenticated}}, "", 0},
		{"extras are lower-cased and unescaped", bob, headers("Impersonate-User", "jane", "Impersonate-Extra-Scopes", "view", "Impersonate-Extra-Scopes", "edit", "Impersonate-Extra-Example.com%2fteam", "a"),
			&User{Name: "jane", Groups: []string{AllAuthenticated}, Extra: map[string][]string{"scopes": {"view", "edit"}, "example.com/team": {"a"}}}, "", 0},
		{"service account gets its groups", root, headers("Impersonate-User", "system:serviceaccount:kube-system:builder"),
			&User{Name: "system:serviceaccount:kube-system:builder", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", AllAuthenticated}}, "", 0},
		{"service account with explicit groups gets only those", root, headers("Impersonate-User", "system:serviceaccount:kube-system:builder", "Impersonate-Group", "g"),
			&User{Name: "system:serviceaccount:kube-system:builder", Groups: []string{"g", AllAuthenticated}}, "", 0},
		{"service account impersonation is checked in its namespace", ci, headers("Impersonate-User", "system:serviceaccount:team:deployer"),
			&User{Name: "system:serviceaccount:team:deployer", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", AllAuthenticated}}, "", 0},

		{"user denied", bob, headers("Impersonate-User", "alice"), nil,
			`users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope`, 403},
		{"group denied", bob, headers("Impersonate-User", "jane", "Impersonate-Group", "system:masters"), nil,
			`groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope`, 403},
		{"uid checked before groups", ci, headers("Impersonate-User", "system:serviceaccount:team:x", "Impersonate-Uid", "u", "Impersonate-Group", "g"), nil,
			`uids.authentication.k8s.io "u" is forbidden: User "ci" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`, 403},
		{"extra denied", bob, headers("Impersonate-User", "jane", "Impersonate-Extra-Other", "x"), nil,
			`userextras.authentication.k8s.io "x" is forbidden: User "bob" cannot impersonate resource "userextras/other" in API group "authentication.k8s.io" at the cluster scope`, 403},
		{"service account denied in another namespace", ci, headers("Impersonate-User", "system:serviceaccount:prod:deployer"), nil,
			`serviceaccounts "deployer" is forbidden: User "ci" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "prod"`, 403},
		{"malformed service account name is a plain user", ci, headers("Impersonate-User", "system:serviceaccount:team:a:b"), nil,
			`users "system:serviceaccount:team:a:b" is forbidden: User "ci" cannot impersonate resource "users" in API group "" at the cluster scope`, 403},
		{"groups without user", bob, headers("Impersonate-Group", "devs"), nil, "without impersonating a user name", 400},
		{"uid without user", bob, headers("Impersonate-Uid", "1"), nil, "without impersonating a user name", 400},
		{"extra without user", bob, headers("Impersonate-Extra-Scopes", "x"), nil, "without impersonating a user name", 400},
		{"no requestor", nil, headers("Impersonate-User", "jane"), nil, "no user found for request", 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Impersonate(tc.requestor, tc.h, az)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("got user %+v, want error", got)
				}
				if tc.wantCode == 403 {
					if err.Error() != tc.wantErr {
						t.Errorf("message\n got %s\nwant %s", err, tc.wantErr)
					}
				} else if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				var status apierrors.APIStatus
				if !errors.As(err, &status) || status.Status().Code != tc.wantCode {
					t.Errorf("err %v is not a %d status", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("user = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestImpersonateAuthorizerErrors(t *testing.T) {
	failing := AuthorizerFunc(func(Attributes) (Decision, string, error) {
		return DecisionNoOpinion, "webhook said", errors.New("webhook down")
	})
	_, err := Impersonate(&User{Name: "bob"}, headers("Impersonate-User", "jane"), failing)
	want := `users "jane" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope: webhook down: webhook said`
	if err == nil || err.Error() != want || !apierrors.IsForbidden(err) {
		t.Errorf("err = %v, want 403 %q", err, want)
	}
}

func TestImpersonationHeaders(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want bool
	}{
		{"none", headers("Authorization", "Bearer x"), false},
		{"user", headers("Impersonate-User", "a"), true},
		{"group", headers("Impersonate-Group", "g"), true},
		{"uid", headers("Impersonate-Uid", "u"), true},
		{"extra", headers("Impersonate-Extra-Foo", "v"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := HasImpersonationHeaders(tc.h); got != tc.want {
				t.Errorf("HasImpersonationHeaders = %v, want %v", got, tc.want)
			}
			DeleteImpersonationHeaders(tc.h)
			if HasImpersonationHeaders(tc.h) {
				t.Errorf("headers left after delete: %v", tc.h)
			}
			if tc.name == "none" && tc.h.Get("Authorization") == "" {
				t.Error("deleted an unrelated header")
			}
		})
	}
}

func TestSplitServiceAccountUsername(t *testing.T) {
	tests := []struct {
		in       string
		ns, name string
		ok       bool
	}{
		{"system:serviceaccount:default:builder", "default", "builder", true},
		{"system:serviceaccount:kube-system:my.sa", "kube-system", "my.sa", true},
		{"system:serviceaccount:default", "", "", false},
		{"system:serviceaccount:a:b:c", "", "", false},
		{"system:serviceaccount:Bad:x", "", "", false},
		{"system:serviceaccount:ns:", "", "", false},
		{"jane", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			ns, name, ok := SplitServiceAccountUsername(tc.in)
			if ns != tc.ns || name != tc.name || ok != tc.ok {
				t.Errorf("got (%q, %q, %v), want (%q, %q, %v)", ns, name, ok, tc.ns, tc.name, tc.ok)
			}
			if ok && ServiceAccountUsername(ns, name) != tc.in {
				t.Errorf("round trip gave %q", ServiceAccountUsername(ns, name))
			}
			if ok != matchesServiceAccount(tc.ns, tc.name, tc.in) && tc.ok {
				t.Errorf("matchesServiceAccount disagrees")
			}
		})
	}
}
