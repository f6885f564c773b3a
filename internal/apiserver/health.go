package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// healthCheck is one named check behind /healthz, /livez and /readyz.
// readyOnly checks count for readiness but not liveness: a server still
// filling its caches is alive, not ready.
type healthCheck struct {
	name      string
	readyOnly bool
	check     func(ctx context.Context) error
}

func (s *Server) checkEtcd(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := s.store.CurrentRevision(ctx)
	return err
}

func (s *Server) checkCaches(context.Context) error {
	for gvr, h := range s.handlers {
		select {
		case <-h.cache.ready:
		default:
			return fmt.Errorf("watch cache of %s not synced", gvr.Resource)
		}
	}
	return nil
}

func (s *Server) checkBootstrapped(context.Context) error {
	select {
	case <-s.ready:
		return nil
	default:
		return errors.New("not finished")
	}
}

// serveHealth answers /healthz, /livez and /readyz as upstream does:
// "ok" when every check passes, the per-check list with ?verbose or on
// failure, /<endpoint>/<check> for one check, ?exclude=<check> to skip.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request, endpoint string, ready bool) {
	ctx := r.Context()
	one := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"+endpoint), "/")
	excluded := map[string]bool{}
	for _, e := range r.URL.Query()["exclude"] {
		excluded[e] = true
	}
	var b strings.Builder
	failed := false
	found := one == ""
	for _, c := range s.checks {
		if c.readyOnly && !ready {
			continue
		}
		if one != "" && c.name != one {
			continue
		}
		found = true
		if excluded[c.name] {
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := c.check(ctx); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", c.name)
			continue
		}
		fmt.Fprintf(&b, "[+]%s ok\n", c.name)
	}
	if !found {
		s.writeError(w, r, notFound())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), endpoint)
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), endpoint)
		return
	}
	fmt.Fprint(w, "ok")
}
