package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
	// overlayOpaque marks a directory that hides the lower layers' one.
	overlayOpaque = "trusted.overlay.opaque"
	xattrPrefix   = "SCHILY.xattr."
)

// unpackLayer extracts the tar stream r into dir, an empty directory
// that becomes one overlayfs lower layer. It writes regular files,
// directories, symlinks, hardlinks (to entries of this layer), device
// nodes and fifos with their modes, owners, xattrs and mtimes; turns OCI
// whiteouts into overlay whiteouts; and refuses any entry whose path, or
// hardlink source, would land outside dir ("../x", or through a symlink
// an earlier entry made). It returns the bytes of file content and the
// number of inodes written.
func unpackLayer(r io.Reader, dir string) (bytes, inodes uint64, err error) {
	u := &unpacker{root: dir, dirs: map[string]bool{".": true}}
	tr := tar.NewReader(r)
	buf := make([]byte, 128<<10)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, 0, fmt.Errorf("read tar: %w", err)
		}
		if err := u.entry(hdr, tr, buf); err != nil {
			return 0, 0, fmt.Errorf("tar entry %q: %w", hdr.Name, err)
		}
	}
	// Directories last, deepest first: writing their children changed
	// their mtimes.
	for i := len(u.dirMeta) - 1; i >= 0; i-- {
		d := u.dirMeta[i]
		if err := setMeta(filepath.Join(u.root, d.rel), d.hdr); err != nil {
			return 0, 0, fmt.Errorf("tar entry %q: %w", d.hdr.Name, err)
		}
	}
	return u.bytes, u.inodes, nil
}

type unpacker struct {
	root          string
	dirs          map[string]bool // relative dirs known to be real directories
	dirMeta       []dirEntry
	bytes, inodes uint64
}

type dirEntry struct {
	rel string
	hdr *tar.Header
}

// cleanRel turns a tar name into a path relative to the layer root, or
// refuses it when it climbs out ("../x", "a/../../x").
func cleanRel(name string) (string, error) {
	n := strings.TrimLeft(name, "/")
	c := path.Clean(n)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path escapes the layer")
	}
	if c == "" {
		c = "."
	}
	return c, nil
}

func (u *unpacker) entry(hdr *tar.Header, r io.Reader, buf []byte) error {
	rel, err := cleanRel(hdr.Name)
	if err != nil {
		return err
	}
	if rel == "." {
		if hdr.Typeflag == tar.TypeDir {
			u.dirMeta = append(u.dirMeta, dirEntry{rel: rel, hdr: hdr})
		}
		return nil
	}
	parent, base := path.Dir(rel), path.Base(rel)
	if err := u.mkParents(parent); err != nil {
		return err
	}
	parentAbs := filepath.Join(u.root, parent)

	switch {
	case base == whiteoutOpaque:
		u.inodes++
		return unix.Lsetxattr(parentAbs, overlayOpaque, []byte("y"), 0)
	case strings.HasPrefix(base, whiteoutPrefix):
		hidden := base[len(whiteoutPrefix):]
		if hidden == "" || hidden == "." || hidden == ".." {
			return fmt.Errorf("bad whiteout")
		}
		target := filepath.Join(parentAbs, hidden)
		if err := u.removeExisting(path.Join(parent, hidden)); err != nil {
			return err
		}
		u.inodes++
		// Overlayfs's whiteout: a 0/0 character device.
		if err := unix.Mknod(target, unix.S_IFCHR|0, int(unix.Mkdev(0, 0))); err != nil {
			return fmt.Errorf("whiteout: %w", err)
		}
		return nil
	}

	abs := filepath.Join(u.root, rel)
	if hdr.Typeflag == tar.TypeDir {
		fi, err := os.Lstat(abs)
		switch {
		case err == nil && fi.IsDir():
		case err == nil:
			if err := u.removeExisting(rel); err != nil {
				return err
			}
			fallthrough
		default:
			if err := os.Mkdir(abs, 0o700); err != nil {
				return err
			}
		}
		u.dirs[rel] = true
		u.inodes++
		u.dirMeta = append(u.dirMeta, dirEntry{rel: rel, hdr: hdr})
		return nil
	}
	if err := u.removeExisting(rel); err != nil {
		return err
	}
	u.inodes++
	switch hdr.Typeflag {
	case tar.TypeReg:
		f, err := os.OpenFile(abs, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		n, err := io.CopyBuffer(f, r, buf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		u.bytes += uint64(n)
	case tar.TypeSymlink:
		if err := os.Symlink(hdr.Linkname, abs); err != nil {
			return err
		}
	case tar.TypeLink:
		src, err := cleanRel(hdr.Linkname)
		if err != nil {
			return fmt.Errorf("hardlink source %q: %w", hdr.Linkname, err)
		}
		if err := u.checkParents(path.Dir(src)); err != nil {
			return fmt.Errorf("hardlink source %q: %w", hdr.Linkname, err)
		}
		if src == "." {
			return fmt.Errorf("hardlink to the layer root")
		}
		// linkat without AT_SYMLINK_FOLLOW links a symlink itself, never
		// what it points to.
		if err := unix.Linkat(unix.AT_FDCWD, filepath.Join(u.root, src), unix.AT_FDCWD, abs, 0); err != nil {
			return fmt.Errorf("hardlink to %q: %w", hdr.Linkname, err)
		}
		return nil // shares the source's inode and metadata
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		mode := uint32(hdr.Mode & 0o7777)
		switch hdr.Typeflag {
		case tar.TypeChar:
			mode |= unix.S_IFCHR
		case tar.TypeBlock:
			mode |= unix.S_IFBLK
		default:
			mode |= unix.S_IFIFO
		}
		if err := unix.Mknod(abs, mode, int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor)))); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unsupported tar entry type %q", hdr.Typeflag)
	}
	return setMeta(abs, hdr)
}

// mkParents makes sure every component of rel is a real directory inside
// the layer, creating missing ones; a symlink there is refused, since
// following it could write outside the layer.
func (u *unpacker) mkParents(rel string) error {
	if u.dirs[rel] {
		return nil
	}
	cur := "."
	for _, c := range strings.Split(rel, "/") {
		cur = path.Join(cur, c)
		if u.dirs[cur] {
			continue
		}
		abs := filepath.Join(u.root, cur)
		fi, err := os.Lstat(abs)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.Mkdir(abs, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case fi.Mode()&os.ModeSymlink != 0:
			return fmt.Errorf("parent %q is a symlink: refusing to extract through it", cur)
		case !fi.IsDir():
			return fmt.Errorf("parent %q is not a directory", cur)
		}
		u.dirs[cur] = true
	}
	return nil
}

// checkParents is mkParents without creating: every component of rel
// must be a real directory.
func (u *unpacker) checkParents(rel string) error {
	cur := "."
	for _, c := range strings.Split(rel, "/") {
		cur = path.Join(cur, c)
		if u.dirs[cur] {
			continue
		}
		fi, err := os.Lstat(filepath.Join(u.root, cur))
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("parent %q is not a directory", cur)
		}
	}
	return nil
}

// removeExisting deletes what an earlier entry wrote at rel (a later
// entry of the same path wins) and forgets directories under it.
func (u *unpacker) removeExisting(rel string) error {
	abs := filepath.Join(u.root, rel)
	if _, err := os.Lstat(abs); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.RemoveAll(abs); err != nil {
		return err
	}
	for d := range u.dirs {
		if d == rel || strings.HasPrefix(d, rel+"/") {
			delete(u.dirs, d)
		}
	}
	return nil
}

// setMeta applies owner, mode, xattrs and mtime from hdr to abs (not
// following a symlink at abs).
func setMeta(abs string, hdr *tar.Header) error {
	if err := unix.Lchown(abs, hdr.Uid, hdr.Gid); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	for k, v := range hdr.PAXRecords {
		name, ok := strings.CutPrefix(k, xattrPrefix)
		// trusted.overlay.* would steer overlayfs (redirects, opacity):
		// an image may not set them; whiteouts are converted above.
		if !ok || strings.HasPrefix(name, "trusted.overlay.") {
			continue
		}
		if err := unix.Lsetxattr(abs, name, []byte(v), 0); err != nil &&
			!errors.Is(err, unix.ENOTSUP) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("xattr %s: %w", name, err)
		}
	}
	if hdr.Typeflag != tar.TypeSymlink {
		// After chown, which clears setuid/setgid.
		if err := unix.Fchmodat(unix.AT_FDCWD, abs, uint32(hdr.Mode&0o7777), 0); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	mtime := hdr.ModTime
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = mtime
	}
	ts := []unix.Timespec{timespec(atime), timespec(mtime)}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, abs, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("utimes: %w", err)
	}
	return nil
}

func timespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(t.UnixNano())
}
