package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// indexVersion is written into index.json; a store written by a newer,
// incompatible layout is refused rather than misread.
const indexVersion = 1

// index is the store's whole metadata: images by ID, names, and the
// unpacked layers by diffID. It lives in Root/index.json and is replaced
// as a whole (temp file + rename) under Root/lock.
type index struct {
	Version int                     `json:"version"`
	Images  map[string]*imageRecord `json:"images"`
	// Names maps a normalised name ("docker.io/library/busybox:latest"
	// or "host/repo@sha256:…") to an image ID.
	Names map[string]string `json:"names"`
	// Layers are the unpacked layers, by diffID.
	Layers map[string]*layerRecord `json:"layers"`
	// NextLayer numbers the next layer directory (Root/layers/<n>).
	NextLayer int `json:"nextLayer"`
}

type imageRecord struct {
	ID       string `json:"id"`
	Manifest string `json:"manifest"` // digest of the manifest blob
	// ManifestSize and ConfigSize are the sizes of those blobs.
	ManifestSize int64        `json:"manifestSize"`
	ConfigSize   int64        `json:"configSize"`
	Layers       []layerRef   `json:"layers"`
	Config       RunConfig    `json:"config"`
	Pinned       bool         `json:"pinned,omitempty"`
	Created      time.Time    `json:"created"`
	LastUsed     time.Time    `json:"lastUsed"`
	Platform     platformSpec `json:"platform"`
}

type platformSpec struct {
	OS           string `json:"os,omitempty"`
	Architecture string `json:"architecture,omitempty"`
}

// layerRef is one layer of an image: its blob and what it unpacks to.
type layerRef struct {
	Digest    string `json:"digest"` // the (usually compressed) blob
	DiffID    string `json:"diffID"` // digest of the uncompressed tar
	Size      int64  `json:"size"`
	MediaType string `json:"mediaType,omitempty"`
}

type layerRecord struct {
	Dir    int    `json:"dir"`
	Bytes  uint64 `json:"bytes"`
	Inodes uint64 `json:"inodes"`
}

func newIndex() *index {
	return &index{
		Version: indexVersion,
		Images:  map[string]*imageRecord{},
		Names:   map[string]string{},
		Layers:  map[string]*layerRecord{},
	}
}

// blobs returns the digests of every blob the index refers to.
func (ix *index) blobs() map[string]bool {
	refs := map[string]bool{}
	for _, r := range ix.Images {
		refs[r.Manifest], refs[r.ID] = true, true
		for _, l := range r.Layers {
			refs[l.Digest] = true
		}
	}
	return refs
}

// diffIDs returns the diffIDs of every layer an image refers to.
func (ix *index) diffIDs() map[string]bool {
	refs := map[string]bool{}
	for _, r := range ix.Images {
		for _, l := range r.Layers {
			refs[l.DiffID] = true
		}
	}
	return refs
}

// namesOf returns the names pointing at id, sorted.
func (ix *index) namesOf(id string) (tags, digests []string) {
	for n, target := range ix.Names {
		if target != id {
			continue
		}
		if isDigestName(n) {
			digests = append(digests, n)
		} else {
			tags = append(tags, n)
		}
	}
	sortStrings(tags)
	sortStrings(digests)
	return tags, digests
}

// errNoChange, returned by an update's fn, ends it without a write.
var errNoChange = errors.New("index unchanged")

// indexFile reads and writes index.json. Readers take the cached copy,
// re-read when the file changed (another process replaced it); writers
// run under an flock of Root/lock so `rudder images import` and the
// runtime can share one Root.
type indexFile struct {
	path, lockPath string

	mu     sync.Mutex // guards cached and stamp
	cached *index
	stamp  fileStamp

	writeMu sync.Mutex // one writer per process; the flock orders processes
}

// fileStamp identifies one version of index.json: every write is a new
// inode (rename), so inode+mtime+size changes with each.
type fileStamp struct {
	ino   uint64
	mtime int64
	size  int64
}

func stampOf(path string) (fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileStamp{}, err
	}
	return fileStamp{ino: st.Ino, mtime: st.Mtim.Nano(), size: st.Size}, nil
}

// view returns the current index. Callers must not modify it.
func (f *indexFile) view() (*index, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := stampOf(f.path)
	if errors.Is(err, os.ErrNotExist) {
		if f.cached == nil {
			f.cached = newIndex()
		}
		return f.cached, nil
	}
	if err != nil {
		return nil, fmt.Errorf("image index: %w", err)
	}
	if f.cached != nil && st == f.stamp {
		return f.cached, nil
	}
	ix, st, err := f.read()
	if err != nil {
		return nil, err
	}
	f.cached, f.stamp = ix, st
	return ix, nil
}

func (f *indexFile) read() (*index, fileStamp, error) {
	file, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return newIndex(), fileStamp{}, nil
	}
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("image index: %w", err)
	}
	defer file.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(file.Fd()), &st); err != nil {
		return nil, fileStamp{}, fmt.Errorf("image index: %w", err)
	}
	ix := newIndex()
	if err := json.NewDecoder(file).Decode(ix); err != nil {
		return nil, fileStamp{}, fmt.Errorf("image index %s: %w", f.path, err)
	}
	if ix.Version != indexVersion {
		return nil, fileStamp{}, fmt.Errorf("image index %s: version %d, this build reads %d", f.path, ix.Version, indexVersion)
	}
	if ix.Images == nil {
		ix.Images = map[string]*imageRecord{}
	}
	if ix.Names == nil {
		ix.Names = map[string]string{}
	}
	if ix.Layers == nil {
		ix.Layers = map[string]*layerRecord{}
	}
	return ix, fileStamp{ino: st.Ino, mtime: st.Mtim.Nano(), size: st.Size}, nil
}

// update runs fn on a fresh copy of the index read under the lock and,
// if fn returns nil, writes the result atomically. after, if not nil,
// runs still under the lock once the new index is durable (to delete
// what it no longer refers to).
func (f *indexFile) update(fn func(ix *index) error, after func()) error {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	unlock, err := lockFile(f.lockPath)
	if err != nil {
		return err
	}
	defer unlock()

	ix, _, err := f.read()
	if err != nil {
		return err
	}
	if err := fn(ix); errors.Is(err, errNoChange) {
		return nil
	} else if err != nil {
		return err
	}
	if err := f.write(ix); err != nil {
		return err
	}
	if after != nil {
		after()
	}
	return nil
}

// locked runs fn under the store lock without writing the index.
func (f *indexFile) locked(fn func(ix *index) error) error {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	unlock, err := lockFile(f.lockPath)
	if err != nil {
		return err
	}
	defer unlock()
	ix, _, err := f.read()
	if err != nil {
		return err
	}
	return fn(ix)
}

func (f *indexFile) write(ix *index) error {
	data, err := json.MarshalIndent(ix, "", " ")
	if err != nil {
		return fmt.Errorf("image index: %w", err)
	}
	if err := writeFileAtomic(f.path, data); err != nil {
		return fmt.Errorf("image index: %w", err)
	}
	st, err := stampOf(f.path)
	if err != nil {
		return fmt.Errorf("image index: %w", err)
	}
	f.mu.Lock()
	f.cached, f.stamp = ix, st
	f.mu.Unlock()
	return nil
}

// writeFileAtomic writes data to a temp file beside path, syncs it and
// renames it over path, so readers see the old or the new file, whole.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lockFile takes an exclusive flock of path, creating it.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("image store lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("image store lock %s: %w", path, err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
