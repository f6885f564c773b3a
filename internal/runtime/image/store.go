package image

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sys/unix"
)

var _ Images = (*Store)(nil)

// Store is the image store on one directory tree (Config.Root). Several
// Stores, in one process or several, may share a Root.
type Store struct {
	root     string
	insecure func(host string) bool
	idx      *indexFile
	now      func() time.Time

	pullMu sync.Mutex
	pulls  map[string]*flight // by normalised reference
}

// Open opens (creating if needed) the store under cfg.Root, removes what
// crashed operations of dead processes left in Root/tmp and unpacked
// layers no image refers to.
func Open(cfg Config) (*Store, error) {
	if cfg.Root == "" {
		return nil, errors.New("image store: Config.Root is required")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	// Paths go into overlay's option string, where ',' and ':' separate.
	if strings.ContainsAny(root, ",:") {
		return nil, fmt.Errorf("image store: root %q must not contain ',' or ':'", root)
	}
	for _, d := range []string{"", "blobs/sha256", "layers", "rootfs", "tmp", "empty"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o711); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	s := &Store{
		root:     root,
		insecure: cfg.Insecure,
		now:      time.Now,
		idx: &indexFile{
			path:     filepath.Join(root, "index.json"),
			lockPath: filepath.Join(root, "lock"),
		},
	}
	if s.insecure == nil {
		s.insecure = DefaultInsecure
	}
	s.cleanTmp()
	if err := s.sweep(); err != nil {
		return nil, err
	}
	return s, nil
}

// DefaultInsecure is the default Config.Insecure: plain HTTP for
// "localhost" and loopback IPs, with or without a port.
func DefaultInsecure(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Root is the store's directory.
func (s *Store) Root() string { return s.root }

func (s *Store) blobPath(digest string) string {
	return filepath.Join(s.root, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

func (s *Store) layerPath(n int) string {
	return filepath.Join(s.root, "layers", strconv.Itoa(n))
}

func (s *Store) rootfsPath(id string) string { return filepath.Join(s.root, "rootfs", id) }

// tempDir makes a directory in Root/tmp named for this process, so a
// later Open can tell a dead process's leftovers from a live one's.
func (s *Store) tempDir(kind string) (string, error) {
	d, err := os.MkdirTemp(filepath.Join(s.root, "tmp"), fmt.Sprintf("%d-%s-", os.Getpid(), kind))
	if err != nil {
		return "", fmt.Errorf("image store: %w", err)
	}
	return d, nil
}

// cleanTmp removes Root/tmp entries of processes that no longer run.
func (s *Store) cleanTmp() {
	dir := filepath.Join(s.root, "tmp")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		pid, _, _ := strings.Cut(e.Name(), "-")
		if n, err := strconv.Atoi(pid); err == nil && !errors.Is(unix.Kill(n, 0), unix.ESRCH) {
			continue // a live process's (maybe this one's) work
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			slog.Warn("image store: removing leftover", "path", e.Name(), "err", err)
		}
	}
}

// sweep removes layer directories the index does not know (a crash
// between a Remove's index write and its deletes) and unreferenced blobs
// older than an hour (a pull that died before its commit; younger ones
// may belong to a pull running in another process).
func (s *Store) sweep() error {
	return s.idx.locked(func(ix *index) error {
		known := map[string]bool{}
		for _, l := range ix.Layers {
			known[strconv.Itoa(l.Dir)] = true
		}
		entries, _ := os.ReadDir(filepath.Join(s.root, "layers"))
		for _, e := range entries {
			if !known[e.Name()] {
				s.removeLayerDir(filepath.Join(s.root, "layers", e.Name()))
			}
		}
		refs := ix.blobs()
		blobs, _ := os.ReadDir(filepath.Join(s.root, "blobs", "sha256"))
		for _, e := range blobs {
			if refs["sha256:"+e.Name()] {
				continue
			}
			if fi, err := e.Info(); err == nil && s.now().Sub(fi.ModTime()) > time.Hour {
				_ = os.Remove(filepath.Join(s.root, "blobs", "sha256", e.Name()))
			}
		}
		return nil
	})
}

// removeLayerDir moves a layer out of Root/layers first, so a crash in
// the middle of the delete never leaves a half layer under a live name.
func (s *Store) removeLayerDir(path string) {
	gone := filepath.Join(s.root, "tmp", fmt.Sprintf("%d-gc-%s", os.Getpid(), filepath.Base(path)))
	if err := os.Rename(path, gone); err != nil {
		gone = path
	}
	if err := os.RemoveAll(gone); err != nil {
		slog.Warn("image store: removing layer", "path", path, "err", err)
	}
}

// Get resolves ref: an image ID ("sha256:…" or its 64 hex digits), a name
// ("busybox", "busybox:1.36", "host:5000/x@sha256:…"), or an ID prefix of
// at least 12 hex digits.
func (s *Store) Get(ref string) (Image, error) {
	ix, err := s.idx.view()
	if err != nil {
		return Image{}, err
	}
	rec, _, err := lookup(ix, ref)
	if err != nil {
		return Image{}, err
	}
	return toImage(ix, rec), nil
}

// List returns every image, sorted by first name then ID.
func (s *Store) List() []Image {
	ix, err := s.idx.view()
	if err != nil {
		slog.Error("image store: list", "err", err)
		return nil
	}
	out := make([]Image, 0, len(ix.Images))
	for _, r := range ix.Images {
		out = append(out, toImage(ix, r))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := firstName(out[i]), firstName(out[j])
		if a != b {
			return a < b
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func firstName(img Image) string {
	if len(img.RepoTags) > 0 {
		return img.RepoTags[0]
	}
	if len(img.RepoDigests) > 0 {
		return img.RepoDigests[0]
	}
	return "\xff" // untagged last
}

// lookup finds ref in ix. nameKey is the index name ref matched, empty
// when ref matched an ID.
func lookup(ix *index, ref string) (rec *imageRecord, nameKey string, err error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, "", errors.New("empty image reference")
	}
	hex := strings.TrimPrefix(ref, "sha256:")
	if isHex(hex) && len(hex) == 64 {
		if r := ix.Images["sha256:"+hex]; r != nil {
			return r, "", nil
		}
	}
	if !strings.HasPrefix(ref, "sha256:") {
		if n, err := normalizeName(ref); err == nil {
			if id, ok := ix.Names[n]; ok && ix.Images[id] != nil {
				return ix.Images[id], n, nil
			}
		}
	}
	if isHex(hex) && len(hex) >= 12 {
		var found *imageRecord
		for id, r := range ix.Images {
			if strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), hex) {
				if found != nil {
					return nil, "", fmt.Errorf("image %q: ambiguous ID prefix", ref)
				}
				found = r
			}
		}
		if found != nil {
			return found, "", nil
		}
	}
	return nil, "", fmt.Errorf("image %q: %w", ref, ErrNotFound)
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// normalizeName gives ref's full name as docker and the kubelet write it:
// "busybox" → "docker.io/library/busybox:latest".
func normalizeName(ref string) (string, error) {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	return canonical(r), nil
}

func canonical(r name.Reference) string {
	repo := repoName(r.Context())
	if d, ok := r.(name.Digest); ok {
		return repo + "@" + d.DigestStr()
	}
	return repo + ":" + r.Identifier()
}

func repoName(repo name.Repository) string {
	reg := repo.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + repo.RepositoryStr()
}

func isDigestName(n string) bool { return strings.Contains(n, "@") }

func sortStrings(s []string) { sort.Strings(s) }

func toImage(ix *index, r *imageRecord) Image {
	tags, digests := ix.namesOf(r.ID)
	size := uint64(r.ConfigSize)
	layers := make([]string, len(r.Layers))
	for i, l := range r.Layers {
		size += uint64(l.Size)
		layers[i] = l.DiffID
	}
	return Image{
		ID:          r.ID,
		RepoTags:    tags,
		RepoDigests: digests,
		Size:        size,
		Config:      r.Config,
		Layers:      layers,
		Pinned:      r.Pinned,
		LastUsed:    r.LastUsed,
	}
}

// Remove drops ref. A tag or digest name goes alone while the image
// keeps another tag (digest names alone do not keep it); an image ID,
// or the last tag, removes the image with all its names. Blobs and
// layers no other image refers to are deleted. Removing an image a
// rootfs still uses fails with ErrInUse and changes nothing.
func (s *Store) Remove(ref string) error {
	var garbageBlobs []string
	var garbageDirs []int
	err := s.idx.update(func(ix *index) error {
		rec, nameKey, err := lookup(ix, ref)
		if err != nil {
			return err
		}
		if nameKey != "" {
			tags, digests := ix.namesOf(rec.ID)
			if isDigestName(nameKey) && len(tags)+len(digests) > 1 ||
				!isDigestName(nameKey) && len(tags) > 1 {
				delete(ix.Names, nameKey)
				return nil
			}
		}
		users, err := s.rootfsUsers(rec.ID)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return fmt.Errorf("image %q (%s) is used by rootfs %s: %w", ref, rec.ID, strings.Join(users, ", "), ErrInUse)
		}
		for n, id := range ix.Names {
			if id == rec.ID {
				delete(ix.Names, n)
			}
		}
		delete(ix.Images, rec.ID)
		blobs, diffIDs := ix.blobs(), ix.diffIDs()
		for _, d := range append([]string{rec.Manifest, rec.ID}, layerDigests(rec)...) {
			if !blobs[d] {
				garbageBlobs = append(garbageBlobs, d)
				blobs[d] = true // once
			}
		}
		for _, l := range rec.Layers {
			if lr := ix.Layers[l.DiffID]; lr != nil && !diffIDs[l.DiffID] {
				garbageDirs = append(garbageDirs, lr.Dir)
				delete(ix.Layers, l.DiffID)
			}
		}
		return nil
	}, func() {
		for _, d := range garbageBlobs {
			_ = os.Remove(s.blobPath(d))
		}
		for _, n := range garbageDirs {
			s.removeLayerDir(s.layerPath(n))
		}
	})
	return err
}

func layerDigests(r *imageRecord) []string {
	out := make([]string, len(r.Layers))
	for i, l := range r.Layers {
		out[i] = l.Digest
	}
	return out
}

// rootfsUsers lists the container IDs whose rootfs was prepared from
// the image id (Root/rootfs/<cid>/image holds it).
func (s *Store) rootfsUsers(id string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.root, "rootfs"))
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	var users []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(s.root, "rootfs", e.Name(), "image"))
		if err == nil && strings.TrimSpace(string(b)) == id {
			users = append(users, e.Name())
		}
	}
	return users, nil
}

// SetPinned marks an image as never to be garbage collected (the pause
// image) or clears the mark.
func (s *Store) SetPinned(ref string, pinned bool) error {
	return s.idx.update(func(ix *index) error {
		rec, _, err := lookup(ix, ref)
		if err != nil {
			return err
		}
		rec.Pinned = pinned
		return nil
	}, nil)
}
