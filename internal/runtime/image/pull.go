package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// platform is what Pull picks from a multi-platform index.
var platform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}

// Pull fetches ref from its registry (see Images.Pull). A reference by
// digest already held needs no network; a tag whose manifest digest is
// held fetches only the manifest. Registry errors are wrapped: a 404
// also wraps ErrNotFound, a blob whose bytes do not match its digest
// ErrDigestMismatch.
func (s *Store) Pull(ctx context.Context, ref string, auth *Auth) (Image, error) {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return Image{}, fmt.Errorf("pull %q: %w", ref, err)
	}
	if s.insecure(r.Context().RegistryStr()) {
		if r, err = name.ParseReference(ref, name.WeakValidation, name.Insecure); err != nil {
			return Image{}, fmt.Errorf("pull %q: %w", ref, err)
		}
	}
	if d, ok := r.(name.Digest); ok {
		if img, ok := s.heldDigest(r.Context(), d.DigestStr()); ok {
			return img, nil
		}
	}
	// Pulls of one reference in this process share one download.
	key := canonical(r)
	s.pullMu.Lock()
	if f, ok := s.pulls[key]; ok {
		s.pullMu.Unlock()
		select {
		case <-f.done:
			if f.err == nil {
				return f.img, nil
			}
			// Its error may be its credential's: try with ours.
		case <-ctx.Done():
			return Image{}, fmt.Errorf("pull %s: %w", ref, ctx.Err())
		}
		s.pullMu.Lock()
	}
	f := &flight{done: make(chan struct{})}
	if s.pulls == nil {
		s.pulls = map[string]*flight{}
	}
	s.pulls[key] = f
	s.pullMu.Unlock()
	defer func() {
		s.pullMu.Lock()
		if s.pulls[key] == f {
			delete(s.pulls, key)
		}
		s.pullMu.Unlock()
		close(f.done)
	}()
	f.img, f.err = s.pullRetrying(ctx, ref, r, auth)
	return f.img, f.err
}

// flight is one Pull in progress, which others of the same reference wait for.
type flight struct {
	done chan struct{}
	img  Image
	err  error
}

func (s *Store) pullRetrying(ctx context.Context, ref string, r name.Reference, auth *Auth) (Image, error) {
	for attempt := 0; ; attempt++ {
		img, err := s.pull(ctx, r, auth)
		if errors.Is(err, errRetry) && attempt < 3 {
			continue
		}
		if err != nil {
			return Image{}, fmt.Errorf("pull %s: %w", ref, err)
		}
		return img, nil
	}
}

// heldDigest returns the image whose manifest (or pulled-by index) has
// digest, naming it repo@digest if it was not so named yet.
func (s *Store) heldDigest(repo name.Repository, digest string) (Image, bool) {
	n := repoName(repo) + "@" + digest
	ix, err := s.idx.view()
	if err != nil {
		return Image{}, false
	}
	var rec *imageRecord
	if id, ok := ix.Names[n]; ok {
		rec = ix.Images[id]
	}
	if rec == nil {
		for _, r := range ix.Images {
			if r.Manifest == digest {
				rec = r
			}
		}
	}
	if rec == nil || !s.complete(ix, rec) {
		return Image{}, false
	}
	var out Image
	err = s.idx.update(func(ix *index) error {
		r := ix.Images[rec.ID]
		if r == nil {
			return errRetry
		}
		ix.Names[n] = r.ID
		out = toImage(ix, r)
		return nil
	}, nil)
	return out, err == nil
}

// complete reports whether every blob and layer of rec is held.
func (s *Store) complete(ix *index, rec *imageRecord) bool {
	for _, d := range append([]string{rec.Manifest, rec.ID}, layerDigests(rec)...) {
		if !s.blobExists(d) {
			return false
		}
	}
	for _, l := range rec.Layers {
		if ix.Layers[l.DiffID] == nil {
			return false
		}
	}
	return true
}

func (s *Store) pull(ctx context.Context, r name.Reference, auth *Auth) (Image, error) {
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuth(authenticator(auth)),
		remote.WithPlatform(platform),
		remote.WithUserAgent("rudder"),
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 3}),
	}
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return Image{}, classify(err)
	}
	top := desc.Digest.String()
	img, err := desc.Image() // an index resolves to the platform's image
	if err != nil {
		return Image{}, classify(err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return Image{}, classify(err)
	}
	names := []string{repoName(r.Context()) + "@" + top}
	if _, isTag := r.(name.Tag); isTag {
		names = append(names, canonical(r))
	}

	// The manifest is held: name it and stop (no layer is fetched).
	md := digestOf(raw)
	ix, err := s.idx.view()
	if err != nil {
		return Image{}, err
	}
	for _, rec := range ix.Images {
		if rec.Manifest == md && s.complete(ix, rec) {
			var out Image
			err := s.idx.update(func(ix *index) error {
				if ix.Images[rec.ID] == nil {
					return errRetry
				}
				for _, n := range names {
					ix.Names[n] = rec.ID
				}
				out = toImage(ix, ix.Images[rec.ID])
				return nil
			}, nil)
			return out, err
		}
	}

	open := func(ctx context.Context, digest string) (io.ReadCloser, error) {
		h, err := v1.NewHash(digest)
		if err != nil {
			return nil, err
		}
		if cfgName, err := img.ConfigName(); err == nil && cfgName == h {
			raw, err := img.RawConfigFile()
			if err != nil {
				return nil, classify(err)
			}
			return io.NopCloser(bytes.NewReader(raw)), nil
		}
		l, err := img.LayerByDigest(h)
		if err != nil {
			return nil, classify(err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, classify(err)
		}
		return rc, nil
	}
	op := newPending()
	if err := s.ingest(ctx, raw, nil, open, names, op); err != nil {
		s.discard(op, true)
		return Image{}, err
	}
	imgs, err := s.commit(op)
	if err != nil {
		s.discard(op, true)
		return Image{}, err
	}
	return imgs[0], nil
}

// authenticator turns a CRI credential into the registry client's.
func authenticator(a *Auth) authn.Authenticator {
	if a == nil || *a == (Auth{}) {
		return authn.Anonymous
	}
	return authn.FromConfig(authn.AuthConfig{
		Username:      a.Username,
		Password:      a.Password,
		Auth:          a.Auth,
		IdentityToken: a.IdentityToken,
		RegistryToken: a.RegistryToken,
	})
}

// classify wraps a registry 404 with ErrNotFound so callers can tell a
// missing image from an unreachable or refusing registry.
func classify(err error) error {
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}
