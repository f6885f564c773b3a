package pki

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeFileAtomic replaces path with data so that a reader, or the next
// start after a crash, sees either the old content or the new, never a
// prefix. The temporary file lives in the same directory because rename is
// only atomic within one file system.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	return replaceFile(path, mode, func(tmp *os.File) error {
		_, err := tmp.Write(data)
		return err
	})
}

// replaceFile creates a temporary sibling of path with mode (set before any
// byte is written, so a key is never briefly world-readable), lets fill
// write it, syncs it, and renames it over path. On any failure the
// temporary file is removed and path is untouched.
func replaceFile(path string, mode os.FileMode, fill func(tmp *os.File) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fill(tmp); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Without syncing the directory the rename itself may not survive a
	// power loss, leaving the old file (or none) after reboot.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
