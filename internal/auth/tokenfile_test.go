package auth

import (
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseTokenFile(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    map[string]*User // token -> user
		wantErr string
	}{
		{
			name: "upstream format",
			content: `# static tokens
abc123,alice,uid-1,"devs,ops"
def456,bob,uid-2
ghi789,carol,uid-3,"",extra,columns
`,
			want: map[string]*User{
				"abc123": {Name: "alice", UID: "uid-1", Groups: []string{"devs", "ops"}},
				"def456": {Name: "bob", UID: "uid-2"},
				"ghi789": {Name: "carol", UID: "uid-3"},
			},
		},
		{
			name:    "single unquoted group",
			content: "t,u,1,admins\n",
			want:    map[string]*User{"t": {Name: "u", UID: "1", Groups: []string{"admins"}}},
		},
		{
			name:    "empty token lines are skipped",
			content: ",nobody,0\nt,u,1\n",
			want:    map[string]*User{"t": {Name: "u", UID: "1"}},
		},
		{
			name:    "blank lines and comments only",
			content: "\n# nothing here\n\n",
			want:    map[string]*User{},
		},
		{
			name:    "too few columns names the line",
			content: "# header\na,alice,1\nb,bob\n",
			wantErr: "line 3: must have at least 3 columns (token, user name, user uid), found 2",
		},
		{
			name:    "duplicate token",
			content: "a,alice,1\n# comment\na,mallory,2\n",
			wantErr: "line 3: duplicate token (first on line 1)",
		},
		{
			name:    "malformed csv",
			content: "a,alice,1\nb,\"bob,2\n",
			wantErr: "line 2",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tf, err := ParseTokenFile(strings.NewReader(tc.content))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "mallory") || strings.Contains(err.Error(), "a,") {
					t.Errorf("error leaks file content: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(tf.tokens, tc.want) {
				t.Errorf("tokens = %v, want %v", tf.tokens, tc.want)
			}
		})
	}
}

func TestLoadTokenFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(good, []byte("s3cret,alice,1,devs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantLen int
		wantErr string
	}{
		{"loads", good, 1, ""},
		{"missing file", filepath.Join(dir, "nope.csv"), 0, "no such file"},
		{"bad file names path and line", bad, 0, `token file "` + bad + `": line 1: must have at least 3 columns`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tf, err := LoadTokenFile(tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error leaks the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tf.Len() != tc.wantLen {
				t.Errorf("Len = %d, want %d", tf.Len(), tc.wantLen)
			}
		})
	}
}

func TestTokenFileAuthenticateRequest(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader("good-token,alice,uid-1,\"devs,ops\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	alice := &User{Name: "alice", UID: "uid-1", Groups: []string{"devs", "ops"}}
	tests := []struct {
		name       string
		header     string
		want       *User
		wantErr    error
		headerKept bool
	}{
		{"known token", "Bearer good-token", alice, nil, false},
		{"scheme is case-insensitive", "bearer good-token", alice, nil, false},
		{"surrounding space is trimmed", "  Bearer good-token  ", alice, nil, false},
		{"unknown token is a 401", "Bearer wrong", nil, ErrInvalidBearerToken, true},
		{"no header is not ours", "", nil, nil, true},
		{"other scheme is not ours", "Basic YWxpY2U6cGFzcw==", nil, nil, true},
		{"empty token is not ours", "Bearer ", nil, nil, true},
		{"double space is an empty token", "Bearer  good-token", nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			u, ok, err := tf.AuthenticateRequest(r)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if ok != (tc.want != nil) || !reflect.DeepEqual(u, tc.want) {
				t.Fatalf("got (%+v, %v), want %+v", u, ok, tc.want)
			}
			if kept := r.Header.Get("Authorization") != ""; tc.header != "" && kept != tc.headerKept {
				t.Errorf("Authorization header kept = %v, want %v", kept, tc.headerKept)
			}
		})
	}

	t.Run("returned users are copies", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer good-token")
		u, _, _ := tf.AuthenticateRequest(r)
		u.Groups[0] = "system:masters"
		r.Header.Set("Authorization", "Bearer good-token")
		again, _, _ := tf.AuthenticateRequest(r)
		if again.Groups[0] != "devs" {
			t.Errorf("modifying a returned user changed the token file: %v", again.Groups)
		}
	})
}
