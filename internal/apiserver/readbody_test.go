package apiserver

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReadBody reads bodies whose announced length is right, wrong or
// missing, and one beyond the limit.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("x", 3000)
	for _, announced := range []int64{-1, 0, 10, 3000, 5000} {
		r := &http.Request{Body: io.NopCloser(strings.NewReader(body)), ContentLength: announced}
		got, err := readBody(r)
		if err != nil || string(got) != body {
			t.Errorf("announced %d: %d bytes, %v", announced, len(got), err)
		}
	}
	big := &http.Request{Body: io.NopCloser(bytes.NewReader(make([]byte, maxBodyBytes+10))), ContentLength: maxBodyBytes + 10}
	if _, err := readBody(big); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("a body beyond the limit: %v", err)
	}
	broken := &http.Request{Body: io.NopCloser(io.MultiReader(strings.NewReader("abc"), errReader{})), ContentLength: 10}
	if _, err := readBody(broken); err == nil {
		t.Error("a body that fails to read was accepted")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
