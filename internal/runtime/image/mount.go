package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// maxMountData is the most mount(2) copies of its data argument: one
// page. Overlay's option string, lowerdirs included, must fit in it.
var maxMountData = os.Getpagesize() - 1

// lastUsedGranularity is how stale Image.LastUsed may be: a Mount
// within it of the last recorded use does not rewrite the index.
const lastUsedGranularity = 10 * time.Second

// overlayIndexOff is whether the kernel knows overlay's index option; we
// turn it off as containerd does, so layers shared by many mounts are
// not tied to one upper directory.
var overlayIndexOff = func() bool {
	_, err := os.Stat("/sys/module/overlay/parameters/index")
	return err == nil
}()

// Mount prepares container id's rootfs from image and mounts it at
// target (see Images.Mount). Root/rootfs/<id>/ holds the upper and work
// directories and the file "image" naming the image, which keeps the
// image from removal until Unmount with remove.
func (s *Store) Mount(ctx context.Context, id, image, target string) (Rootfs, error) {
	if err := checkID(id); err != nil {
		return Rootfs{}, err
	}
	if target == "" {
		return Rootfs{}, errors.New("mount: empty target")
	}
	ix, err := s.idx.view()
	if err != nil {
		return Rootfs{}, err
	}
	rec, _, err := lookup(ix, image)
	if err != nil {
		return Rootfs{}, fmt.Errorf("mount %s: %w", id, err)
	}

	dir := s.rootfsPath(id)
	_, statErr := os.Stat(dir)
	fresh := errors.Is(statErr, os.ErrNotExist)
	fail := func(err error) (Rootfs, error) {
		if fresh {
			os.RemoveAll(dir)
		}
		return Rootfs{}, fmt.Errorf("mount %s: %w", id, err)
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fail(err)
		}
	}
	marker := filepath.Join(dir, "image")
	if b, err := os.ReadFile(marker); err != nil || string(b) != rec.ID+"\n" {
		if err := writeFileAtomic(marker, []byte(rec.ID+"\n")); err != nil {
			return fail(err)
		}
	}
	// The marker is written before this check, and Remove reads markers
	// under the lock: either it sees ours or we see the image gone.
	var lowers []int
	err = s.idx.update(func(ix *index) error {
		r := ix.Images[rec.ID]
		if r == nil {
			return fmt.Errorf("image %s: %w", rec.ID, ErrNotFound)
		}
		lowers, err = lowerDirs(ix, r)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		if now.Sub(r.LastUsed) < lastUsedGranularity {
			return errNoChange // spare the write; image GC counts minutes
		}
		r.LastUsed = now
		return nil
	}, nil)
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if err := s.mountOverlay(lowers, dir, target); err != nil {
		return fail(err)
	}
	return Rootfs{Target: target}, nil
}

// lowerDirs returns rec's layer directory numbers, top layer first, each
// once (a layer repeated lower down adds nothing its top copy does not).
// -1 stands for the empty directory of an image without layers.
func lowerDirs(ix *index, rec *imageRecord) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for i := len(rec.Layers) - 1; i >= 0; i-- {
		l := ix.Layers[rec.Layers[i].DiffID]
		if l == nil {
			return nil, fmt.Errorf("image %s: layer %s is not unpacked", rec.ID, rec.Layers[i].DiffID)
		}
		if !seen[l.Dir] {
			seen[l.Dir] = true
			out = append(out, l.Dir)
		}
	}
	if len(out) == 0 {
		out = []int{-1}
	}
	return out, nil
}

func (s *Store) lowerPath(n int, relative bool) string {
	switch {
	case n < 0 && relative:
		return "../empty"
	case n < 0:
		return filepath.Join(s.root, "empty")
	case relative:
		return strconv.Itoa(n)
	default:
		return s.layerPath(n)
	}
}

// overlayOptions renders overlay's option string; relative lowerdirs are
// relative to Root/layers.
func (s *Store) overlayOptions(lowers []int, dir string, relative bool) string {
	var b strings.Builder
	b.WriteString("lowerdir=")
	for i, n := range lowers {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(s.lowerPath(n, relative))
	}
	b.WriteString(",upperdir=" + filepath.Join(dir, "upper") + ",workdir=" + filepath.Join(dir, "work"))
	if overlayIndexOff {
		b.WriteString(",index=off")
	}
	return b.String()
}

// mountOverlay mounts the overlay. When absolute lowerdirs overflow the
// one-page limit of mount(2)'s data, it mounts with lowerdirs relative
// to Root/layers from a thread whose working directory is there: the
// thread unshares its fs state first, so the chdir touches no other
// goroutine, and is never returned to the scheduler.
func (s *Store) mountOverlay(lowers []int, dir, target string) error {
	opts := s.overlayOptions(lowers, dir, false)
	if len(opts) <= maxMountData {
		if err := unix.Mount("overlay", target, "overlay", 0, opts); err != nil {
			return fmt.Errorf("overlay mount (%d layers) on %s: %w", len(lowers), target, err)
		}
		return nil
	}
	opts = s.overlayOptions(lowers, dir, true)
	if len(opts) > maxMountData {
		return fmt.Errorf("overlay mount: %d layers do not fit in one mount even with relative paths", len(lowers))
	}
	layers := filepath.Join(s.root, "layers")
	errc := make(chan error, 1)
	go func() {
		// Not unlocked: the goroutine's exit ends the thread, and with
		// it the working directory no other goroutine may inherit.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- fmt.Errorf("unshare fs: %w", err)
			return
		}
		if err := unix.Chdir(layers); err != nil {
			errc <- err
			return
		}
		errc <- unix.Mount("overlay", target, "overlay", 0, opts)
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("overlay mount (%d layers, relative lowerdirs) on %s: %w", len(lowers), target, err)
	}
	return nil
}

// Unmount unmounts target (nothing if it is not mounted) and, with
// remove, deletes the rootfs's upper and work directories and target
// itself if left empty.
func (s *Store) Unmount(id, target string, remove bool) error {
	if err := checkID(id); err != nil {
		return err
	}
	if target != "" {
		if err := unmount(target); err != nil {
			return fmt.Errorf("unmount %s: %w", id, err)
		}
	}
	if !remove {
		return nil
	}
	if err := os.RemoveAll(s.rootfsPath(id)); err != nil {
		return fmt.Errorf("unmount %s: remove rootfs: %w", id, err)
	}
	if target != "" {
		_ = os.Remove(target) // only if empty
	}
	return nil
}

func unmount(target string) error {
	for {
		err := unix.Unmount(target, 0)
		switch {
		case err == nil:
			continue // a mount stacked twice: unmount both
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil // not (or no longer) a mount point
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EBUSY):
			return unix.Unmount(target, unix.MNT_DETACH)
		default:
			return err
		}
	}
}

// checkID refuses container IDs that are not one plain path component.
func checkID(id string) error {
	if id == "" || id == "." || id == ".." || len(id) > 128 {
		return fmt.Errorf("invalid container id %q", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("invalid container id %q", id)
		}
	}
	return nil
}

// Usage reports the filesystem holding Root, and the bytes and inodes
// the store's blobs and unpacked layers take (from the index, without
// walking the tree).
func (s *Store) Usage() (FilesystemUsage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(s.root, &st); err != nil {
		return FilesystemUsage{}, fmt.Errorf("image store usage: %w", err)
	}
	ix, err := s.idx.view()
	if err != nil {
		return FilesystemUsage{}, err
	}
	u := FilesystemUsage{
		Mountpoint:     s.root,
		CapacityBytes:  st.Blocks * uint64(st.Bsize),
		AvailableBytes: st.Bavail * uint64(st.Bsize),
	}
	seen := map[string]bool{}
	add := func(d string, size int64) {
		if !seen[d] {
			seen[d] = true
			u.UsedBytes += uint64(size)
			u.InodesUsed++
		}
	}
	for _, r := range ix.Images {
		add(r.Manifest, r.ManifestSize)
		add(r.ID, r.ConfigSize)
		for _, l := range r.Layers {
			add(l.Digest, l.Size)
		}
	}
	for _, l := range ix.Layers {
		u.UsedBytes += l.Bytes
		u.InodesUsed += l.Inodes
	}
	return u, nil
}
