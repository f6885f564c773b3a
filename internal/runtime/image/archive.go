package image

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations naming an image in an OCI layout's index.json.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// maxMetadata bounds a manifest, config or index read from an archive.
const maxMetadata = 32 << 20

// Import reads a docker-archive (`docker save`, manifest.json) or an OCI
// image layout tarball (index.json), plain or gzip-compressed, and
// stores every image in it. The archive is first unpacked into a temp
// dir under Root/tmp, so a truncated or corrupt archive fails before the
// store is touched; a bad blob found later fails the whole import and
// removes what it had added.
func (s *Store) Import(ctx context.Context, r io.Reader) ([]Image, error) {
	dir, err := s.tempDir("import")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := extractArchive(ctx, r, dir); err != nil {
		return nil, fmt.Errorf("import: archive: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer root.Close()

	op := newPending()
	switch {
	case exists(root, "manifest.json"):
		err = s.importDocker(ctx, root, op)
	case exists(root, "index.json"):
		err = s.importOCI(ctx, root, op)
	default:
		err = errors.New("not an image archive: neither manifest.json (docker-archive) nor index.json (OCI layout) at its top")
	}
	if err == nil && len(op.images) == 0 {
		err = errors.New("the archive holds no image")
	}
	if err != nil {
		s.discard(op, true)
		return nil, fmt.Errorf("import: %w", err)
	}
	imgs, err := s.commit(op)
	if err != nil {
		s.discard(op, true)
		return nil, fmt.Errorf("import: %w", err)
	}
	return imgs, nil
}

// extractArchive unpacks the (maybe gzip-compressed) tar stream r into
// dir with the layer unpacker's path checks.
func extractArchive(ctx context.Context, r io.Reader, dir string) error {
	br := bufio.NewReader(ctxReader{ctx, r})
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer zr.Close()
		_, _, err = unpackLayer(zr, dir)
		return err
	}
	_, _, err := unpackLayer(br, dir)
	return err
}

func exists(root *os.Root, name string) bool {
	_, err := root.Stat(name)
	return err == nil
}

func readSmall(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMetadata+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxMetadata {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxMetadata)
	}
	return b, nil
}

// dockerManifest is one entry of a docker-archive's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

func (s *Store) importDocker(ctx context.Context, root *os.Root, op *pending) error {
	raw, err := readSmall(root, "manifest.json")
	if err != nil {
		return err
	}
	var entries []dockerManifest
	if err := json.Unmarshal(raw, &entries); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	for _, e := range entries {
		configRaw, err := readSmall(root, e.Config)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		// A docker-archive has no registry manifest: write one (OCI) for
		// the config and layer files as they are, and hash each file.
		m := v1.Manifest{
			SchemaVersion: 2,
			MediaType:     types.OCIManifestSchema1,
			Config:        v1.Descriptor{MediaType: types.OCIConfigJSON, Size: int64(len(configRaw)), Digest: mustHash(digestOf(configRaw))},
		}
		files := map[string]string{}
		for _, lp := range e.Layers {
			d, size, mt, err := describeFile(root, lp)
			if err != nil {
				return fmt.Errorf("layer %s: %w", lp, err)
			}
			files[d.String()] = lp
			m.Layers = append(m.Layers, v1.Descriptor{MediaType: mt, Size: size, Digest: d})
		}
		manifestRaw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		var names []string
		for _, t := range e.RepoTags {
			n, err := normalizeName(t)
			if err != nil {
				return err
			}
			names = append(names, n)
		}
		open := func(_ context.Context, digest string) (io.ReadCloser, error) {
			if p, ok := files[digest]; ok {
				return root.Open(p)
			}
			return nil, fmt.Errorf("%w: not in the archive", fs.ErrNotExist)
		}
		if err := s.ingest(ctx, manifestRaw, configRaw, open, names, op); err != nil {
			return err
		}
	}
	return nil
}

// describeFile hashes a layer file and tells its compression by magic.
func describeFile(root *os.Root, p string) (v1.Hash, int64, types.MediaType, error) {
	f, err := root.Open(p)
	if err != nil {
		return v1.Hash{}, 0, "", err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	magic, _ := br.Peek(4)
	mt := types.OCIUncompressedLayer
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		mt = types.OCILayer
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		mt = types.OCILayerZStd
	}
	h, n, err := v1.SHA256(br)
	return h, n, mt, err
}

func mustHash(d string) v1.Hash {
	h, _ := v1.NewHash(d)
	return h
}

func (s *Store) importOCI(ctx context.Context, root *os.Root, op *pending) error {
	raw, err := readSmall(root, "index.json")
	if err != nil {
		return err
	}
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	open := func(_ context.Context, digest string) (io.ReadCloser, error) {
		if err := checkDigest(digest); err != nil {
			return nil, err
		}
		return root.Open("blobs/sha256/" + strings.TrimPrefix(digest, "sha256:"))
	}
	readBlob := func(d v1.Hash) ([]byte, error) {
		b, err := readSmall(root, "blobs/sha256/"+d.Hex)
		if err != nil {
			return nil, err
		}
		if got := digestOf(b); got != d.String() {
			return nil, fmt.Errorf("blob %s: %w: expected %s, got %s", d, ErrDigestMismatch, d, got)
		}
		return b, nil
	}
	for _, desc := range idx.Manifests {
		names := ociNames(desc.Annotations)
		manifestRaw, err := resolveOCI(desc, readBlob, 0)
		if err != nil {
			return err
		}
		if err := s.ingest(ctx, manifestRaw, nil, open, names, op); err != nil {
			return err
		}
	}
	return nil
}

// resolveOCI follows nested indexes down to the image manifest for this
// platform (or the only one).
func resolveOCI(desc v1.Descriptor, readBlob func(v1.Hash) ([]byte, error), depth int) ([]byte, error) {
	if depth > 4 {
		return nil, errors.New("index.json: indexes nested too deep")
	}
	b, err := readBlob(desc.Digest)
	if err != nil {
		return nil, err
	}
	if !desc.MediaType.IsIndex() {
		return b, nil
	}
	child, err := v1.ParseIndexManifest(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", desc.Digest, err)
	}
	var pick *v1.Descriptor
	for i, m := range child.Manifests {
		if m.Platform == nil || m.Platform.OS == platform.OS && m.Platform.Architecture == platform.Architecture {
			pick = &child.Manifests[i]
			break
		}
	}
	if pick == nil {
		return nil, fmt.Errorf("index %s: no manifest for %s/%s", desc.Digest, platform.OS, platform.Architecture)
	}
	return resolveOCI(*pick, readBlob, depth+1)
}

// ociNames is the name an OCI layout gives an image: containerd's full
// name annotation, else the ref.name annotation when it is a full
// reference (a bare tag such as "latest" names no repository).
func ociNames(ann map[string]string) []string {
	for _, key := range []string{annotationContainerdName, annotationRefName} {
		v := ann[key]
		if v == "" || key == annotationRefName && !strings.ContainsAny(v, "/:@") {
			continue
		}
		if n, err := normalizeName(v); err == nil {
			return []string{n}
		}
	}
	return nil
}

// Export writes the images refs name as one docker-archive tarball. A
// ref that is a tag is written with that tag; an ID or digest with all
// the image's tags.
func (s *Store) Export(ctx context.Context, w io.Writer, refs ...string) error {
	if len(refs) == 0 {
		return errors.New("export: no image named")
	}
	ix, err := s.idx.view()
	if err != nil {
		return err
	}
	images := map[string]v1.Image{}
	out := map[name.Reference]v1.Image{}
	for _, ref := range refs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, nameKey, err := lookup(ix, ref)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		img := images[rec.ID]
		if img == nil {
			if img, err = partial.CompressedToImage(&storedImage{s: s, rec: rec}); err != nil {
				return fmt.Errorf("export %s: %w", ref, err)
			}
			images[rec.ID] = img
		}
		tags := []string{nameKey}
		if nameKey == "" || isDigestName(nameKey) {
			tags, _ = ix.namesOf(rec.ID)
		}
		for _, t := range tags {
			tag, err := name.NewTag(t, name.WeakValidation)
			if err != nil {
				return fmt.Errorf("export %s: %w", t, err)
			}
			out[tag] = img
		}
		if len(tags) == 0 {
			d, err := name.NewDigest("untagged@"+rec.Manifest, name.WeakValidation)
			if err != nil {
				return fmt.Errorf("export %s: %w", ref, err)
			}
			out[d] = img
		}
	}
	if err := tarball.MultiRefWrite(out, w); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// storedImage is a held image as go-containerregistry's
// CompressedImageCore, for tarball.Write.
type storedImage struct {
	s   *Store
	rec *imageRecord
}

func (i *storedImage) RawConfigFile() ([]byte, error) { return os.ReadFile(i.s.blobPath(i.rec.ID)) }
func (i *storedImage) RawManifest() ([]byte, error)   { return os.ReadFile(i.s.blobPath(i.rec.Manifest)) }
func (i *storedImage) MediaType() (types.MediaType, error) {
	raw, err := i.RawManifest()
	if err != nil {
		return "", err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return "", err
	}
	if m.MediaType == "" {
		return types.OCIManifestSchema1, nil
	}
	return m.MediaType, nil
}

func (i *storedImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, l := range i.rec.Layers {
		if l.Digest == h.String() {
			return &storedLayer{fileLayer{path: i.s.blobPath(l.Digest), digest: l.Digest}, types.MediaType(l.MediaType)}, nil
		}
	}
	if h.String() == i.rec.ID {
		return &storedLayer{fileLayer{path: i.s.blobPath(i.rec.ID), digest: i.rec.ID}, types.OCIConfigJSON}, nil
	}
	return nil, fmt.Errorf("image %s has no layer %s", i.rec.ID, h)
}

type storedLayer struct {
	fileLayer
	mt types.MediaType
}

func (l *storedLayer) MediaType() (types.MediaType, error) {
	if l.mt == "" {
		return types.OCILayer, nil
	}
	return l.mt, nil
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
