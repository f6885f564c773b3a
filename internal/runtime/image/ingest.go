package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"
)

// ErrDigestMismatch is returned (wrapped) when a blob's content does not
// hash to the digest that names it; the error names both digests.
var ErrDigestMismatch = errors.New("digest mismatch")

// errRetry tells a Pull or Import that a blob or layer it found present
// was garbage collected (by another process) before its commit.
var errRetry = errors.New("image store: content removed concurrently, retry")

// opener opens a blob's bytes, as a registry or an archive holds them.
type opener func(ctx context.Context, digest string) (io.ReadCloser, error)

// pending is one Pull or Import between fetching and its commit: the
// images to record and what it created, to delete if it fails.
type pending struct {
	// mu guards newBlobs and newLayers while layers are fetched in
	// parallel; commit and discard run after the fetches.
	mu        sync.Mutex
	images    []pendingImage
	newBlobs  []string           // digests this operation moved into blobs/
	newLayers map[string]*unpack // diffID → unpacked into a temp dir
}

type pendingImage struct {
	rec   *imageRecord
	names []string
}

type unpack struct {
	dir           string
	bytes, inodes uint64
}

func newPending() *pending { return &pending{newLayers: map[string]*unpack{}} }

func (s *Store) blobExists(digest string) bool {
	_, err := os.Lstat(s.blobPath(digest))
	return err == nil
}

// putBlob stores the blob digest from open unless held, verifying that
// its content hashes to digest; a mismatch stores nothing.
func (s *Store) putBlob(ctx context.Context, digest string, open opener, op *pending) error {
	if s.blobExists(digest) {
		return nil
	}
	if err := checkDigest(digest); err != nil {
		return err
	}
	rc, err := open(ctx, digest)
	if err != nil {
		return fmt.Errorf("blob %s: %w", digest, err)
	}
	defer rc.Close()
	return s.writeBlob(ctx, digest, rc, op)
}

// putBytes stores data as the blob digest, verifying it.
func (s *Store) putBytes(digest string, data []byte, op *pending) error {
	if got := digestOf(data); got != digest {
		return fmt.Errorf("blob %s: %w: expected %s, got %s", digest, ErrDigestMismatch, digest, got)
	}
	if s.blobExists(digest) {
		return nil
	}
	return s.writeBlob(context.Background(), digest, bytes.NewReader(data), op)
}

func (s *Store) writeBlob(ctx context.Context, digest string, r io.Reader, op *pending) error {
	tmp, err := os.CreateTemp(filepath.Join(s.root, "tmp"), fmt.Sprintf("%d-blob-", os.Getpid()))
	if err != nil {
		return fmt.Errorf("image store: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	_, copyErr := io.Copy(io.MultiWriter(tmp, h), ctxReader{ctx, r})
	got := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if got != digest && (copyErr == nil || strings.Contains(copyErr.Error(), "checksum")) {
		// The registry client verifies too and may fail first; the
		// mismatch is the cause either way.
		return fmt.Errorf("blob %s: %w: expected %s, got %s", digest, ErrDigestMismatch, digest, got)
	}
	if copyErr != nil {
		return fmt.Errorf("blob %s: %w", digest, copyErr)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("blob %s: %w", digest, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("blob %s: %w", digest, err)
	}
	if err := os.Rename(tmp.Name(), s.blobPath(digest)); err != nil {
		return fmt.Errorf("blob %s: %w", digest, err)
	}
	op.mu.Lock()
	op.newBlobs = append(op.newBlobs, digest)
	op.mu.Unlock()
	return nil
}

// ensureLayer makes sure the layer's blob is held and its content is
// unpacked (in the index already, or into a temp dir op commits).
func (s *Store) ensureLayer(ctx context.Context, l layerRef, open opener, op *pending) error {
	if err := checkDigest(l.DiffID); err != nil {
		return fmt.Errorf("layer %s: diffID: %w", l.Digest, err)
	}
	if err := s.putBlob(ctx, l.Digest, open, op); err != nil {
		return fmt.Errorf("layer %s: %w", l.Digest, err)
	}
	ix, err := s.idx.view()
	if err != nil {
		return err
	}
	op.mu.Lock()
	have := ix.Layers[l.DiffID] != nil || op.newLayers[l.DiffID] != nil
	op.mu.Unlock()
	if have {
		return nil
	}
	u, err := s.unpackBlob(ctx, l)
	if err != nil {
		return fmt.Errorf("layer %s: %w", l.Digest, err)
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.newLayers[l.DiffID] != nil { // unpacked twice at once
		os.RemoveAll(u.dir)
		return nil
	}
	op.newLayers[l.DiffID] = u
	return nil
}

// unpackBlob unpacks a held layer blob into a new temp dir, verifying
// that its uncompressed stream hashes to the diffID.
func (s *Store) unpackBlob(ctx context.Context, l layerRef) (*unpack, error) {
	layer, err := partial.CompressedToLayer(&fileLayer{path: s.blobPath(l.Digest), digest: l.Digest})
	if err != nil {
		return nil, err
	}
	rc, err := layer.Uncompressed() // gzip, zstd or plain, by magic
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	defer rc.Close()
	dir, err := s.tempDir("layer")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h := sha256.New()
	tee := io.TeeReader(ctxReader{ctx, rc}, h)
	bytes, inodes, err := unpackLayer(tee, dir)
	if err == nil {
		// The tar's end blocks and any padding count in the diffID.
		_, err = io.Copy(io.Discard, tee)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != l.DiffID {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("uncompressed content (diffID): %w: expected %s, got %s", ErrDigestMismatch, l.DiffID, got)
	}
	return &unpack{dir: dir, bytes: bytes, inodes: inodes}, nil
}

// commit records op's images in the index, moving its unpacked layers to
// their numbered directories. It returns errRetry when something op
// found held was removed (by another process) in the meantime.
func (s *Store) commit(op *pending) ([]Image, error) {
	if len(op.newLayers) > 0 {
		// The index must never name a layer whose files are not durable.
		if f, err := os.Open(s.root); err == nil {
			_ = unix.Syncfs(int(f.Fd()))
			f.Close()
		}
	}
	var moved []string
	var out []Image
	err := s.idx.update(func(ix *index) error {
		moved = moved[:0]
		for _, p := range op.images {
			need := append([]string{p.rec.Manifest, p.rec.ID}, layerDigests(p.rec)...)
			for _, d := range need {
				if !s.blobExists(d) {
					return fmt.Errorf("blob %s: %w", d, errRetry)
				}
			}
			for _, l := range p.rec.Layers {
				if ix.Layers[l.DiffID] != nil {
					continue
				}
				u := op.newLayers[l.DiffID]
				if u == nil || u.dir == "" {
					return fmt.Errorf("layer %s: %w", l.DiffID, errRetry)
				}
				n := ix.NextLayer
				ix.NextLayer++
				dst := s.layerPath(n)
				if err := os.Rename(u.dir, dst); err != nil {
					return fmt.Errorf("image store: %w", err)
				}
				moved = append(moved, dst)
				u.dir = ""
				ix.Layers[l.DiffID] = &layerRecord{Dir: n, Bytes: u.bytes, Inodes: u.inodes}
			}
			rec := p.rec
			if old := ix.Images[rec.ID]; old != nil {
				rec.Created, rec.LastUsed, rec.Pinned = old.Created, old.LastUsed, old.Pinned
			}
			ix.Images[rec.ID] = rec
			for _, n := range p.names {
				ix.Names[n] = rec.ID
			}
		}
		for _, p := range op.images {
			out = append(out, toImage(ix, ix.Images[p.rec.ID]))
		}
		return nil
	}, nil)
	if err != nil {
		for _, d := range moved {
			s.removeLayerDir(d)
		}
		return nil, err
	}
	s.discard(op, false)
	return out, nil
}

// discard removes op's temp layers and, when failed, the blobs it added
// that no image refers to.
func (s *Store) discard(op *pending, failed bool) {
	for _, u := range op.newLayers {
		if u.dir != "" {
			os.RemoveAll(u.dir)
			u.dir = ""
		}
	}
	if !failed || len(op.newBlobs) == 0 {
		return
	}
	_ = s.idx.locked(func(ix *index) error {
		refs := ix.blobs()
		for _, d := range op.newBlobs {
			if !refs[d] {
				os.Remove(s.blobPath(d))
			}
		}
		return nil
	})
	op.newBlobs = nil
}

// ingest stores one image from its manifest: blobs verified, layers
// unpacked, added to op for commit.
func (s *Store) ingest(ctx context.Context, manifestRaw, configRaw []byte, open opener, names []string, op *pending) error {
	m, err := v1.ParseManifest(bytes.NewReader(manifestRaw))
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if m.MediaType.IsIndex() {
		return errors.New("manifest: an index where an image manifest was expected")
	}
	manifestDigest := digestOf(manifestRaw)
	if configRaw == nil {
		rc, err := open(ctx, m.Config.Digest.String())
		if err != nil {
			return fmt.Errorf("config %s: %w", m.Config.Digest, err)
		}
		configRaw, err = io.ReadAll(io.LimitReader(rc, 32<<20))
		rc.Close()
		if err != nil {
			return fmt.Errorf("config %s: %w", m.Config.Digest, err)
		}
	}
	id := m.Config.Digest.String()
	cf, err := v1.ParseConfigFile(bytes.NewReader(configRaw))
	if err != nil {
		return fmt.Errorf("config %s: %w", id, err)
	}
	if cf.OS != "" && cf.OS != "linux" {
		return fmt.Errorf("image %s is for %s/%s; this runtime runs linux images", id, cf.OS, cf.Architecture)
	}
	if len(cf.RootFS.DiffIDs) != len(m.Layers) {
		return fmt.Errorf("image %s: config lists %d layers (diff_ids), manifest %d", id, len(cf.RootFS.DiffIDs), len(m.Layers))
	}
	if err := s.putBytes(manifestDigest, manifestRaw, op); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := s.putBytes(id, configRaw, op); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	rec := &imageRecord{
		ID:           id,
		Manifest:     manifestDigest,
		ManifestSize: int64(len(manifestRaw)),
		ConfigSize:   int64(len(configRaw)),
		Config:       runConfig(cf),
		Created:      s.now().UTC(),
		// A new image counts as just used, or image GC would see it as
		// unused since forever.
		LastUsed: s.now().UTC(),
		Platform: platformSpec{OS: cf.OS, Architecture: cf.Architecture},
	}
	rec.Layers = make([]layerRef, len(m.Layers))
	for i, d := range m.Layers {
		rec.Layers[i] = layerRef{Digest: d.Digest.String(), DiffID: cf.RootFS.DiffIDs[i].String(), Size: d.Size, MediaType: string(d.MediaType)}
	}
	if err := s.ensureLayers(ctx, rec.Layers, open, op); err != nil {
		return err
	}
	op.images = append(op.images, pendingImage{rec: rec, names: names})
	return nil
}

// parallelLayers is how many layers of one image are fetched and
// unpacked at once.
const parallelLayers = 3

// ensureLayers runs ensureLayer for each layer, a few at once; the first
// error cancels the rest.
func (s *Store) ensureLayers(ctx context.Context, layers []layerRef, open opener, op *pending) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, parallelLayers)
	errs := make([]error, len(layers))
	var wg sync.WaitGroup
	for i, l := range layers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			if errs[i] = s.ensureLayer(ctx, l, open, op); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs { // the cause, not the cancellations it made
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func runConfig(cf *v1.ConfigFile) RunConfig {
	c := cf.Config
	rc := RunConfig{
		User:       c.User,
		Env:        slices.Clone(c.Env),
		Entrypoint: slices.Clone(c.Entrypoint),
		Cmd:        slices.Clone(c.Cmd),
		WorkingDir: c.WorkingDir,
		StopSignal: c.StopSignal,
		Labels:     c.Labels,
	}
	for p := range c.ExposedPorts {
		rc.ExposedPorts = append(rc.ExposedPorts, p)
	}
	for v := range c.Volumes {
		rc.Volumes = append(rc.Volumes, v)
	}
	sort.Strings(rc.ExposedPorts)
	sort.Strings(rc.Volumes)
	return rc
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func checkDigest(d string) error {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 || !isHex(hexPart) {
		return fmt.Errorf("unsupported digest %q (want sha256:<64 hex>)", d)
	}
	return nil
}

// fileLayer is a held blob as go-containerregistry's CompressedLayer,
// so its Uncompressed detects gzip, zstd or none.
type fileLayer struct{ path, digest string }

func (f *fileLayer) Digest() (v1.Hash, error)            { return v1.NewHash(f.digest) }
func (f *fileLayer) Compressed() (io.ReadCloser, error)  { return os.Open(f.path) }
func (f *fileLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (f *fileLayer) Size() (int64, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// ctxReader stops a long copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
