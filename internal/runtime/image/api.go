package image

// This file is the contract between the image store and its users (the
// CRI server in internal/runtime, `rudder images`). It was written before
// the implementation; keep the signatures unless both sides agree.

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned (wrapped) when a reference names no image held
// by the store.
var ErrNotFound = errors.New("image not found")

// ErrInUse is returned (wrapped) by Remove while a rootfs uses the image.
var ErrInUse = errors.New("image is in use")

// Config is what Open needs. Zero values take the documented defaults.
type Config struct {
	// Root holds blobs, unpacked layers, the index and rootfs snapshots
	// (e.g. /var/lib/rudder/agent/images).
	Root string
	// Insecure reports whether a registry host:port is reached over
	// plain HTTP (default: loopback hosts and "localhost").
	Insecure func(host string) bool
}

// Auth is a registry credential, as CRI's AuthConfig and a
// dockerconfigjson entry carry it.
type Auth struct {
	Username, Password, Auth, IdentityToken, RegistryToken string
}

// Image is one image the store holds.
type Image struct {
	// ID is the digest of the image's config ("sha256:…"), as crictl and
	// the kubelet's imageID show it.
	ID string
	// RepoTags are the normalised names that point at it
	// ("docker.io/library/busybox:latest"); RepoDigests the name@digest
	// forms it was pulled by.
	RepoTags, RepoDigests []string
	// Size is the bytes of its compressed layers plus config.
	Size uint64
	// Config is the runnable part of the image's config.
	Config RunConfig
	// Layers are the diff IDs, bottom first.
	Layers []string
	// Pinned images are never garbage collected (the pause image, if any).
	Pinned bool
	// LastUsed is when a rootfs was last prepared from the image.
	LastUsed time.Time
}

// RunConfig is the OCI image config's part a container runs with.
type RunConfig struct {
	User         string
	Env          []string
	Entrypoint   []string
	Cmd          []string
	WorkingDir   string
	StopSignal   string
	ExposedPorts []string
	Volumes      []string
	Labels       map[string]string
}

// FilesystemUsage is what the image filesystem holds, for CRI's
// ImageFsInfo and the kubelet's image garbage collection.
type FilesystemUsage struct {
	Mountpoint     string
	UsedBytes      uint64
	InodesUsed     uint64
	CapacityBytes  uint64
	AvailableBytes uint64
}

// Rootfs is a container's writable root: an overlay of the image's
// layers (lower, read-only, shared) and its own upper directory.
type Rootfs struct {
	// Target is where it is mounted.
	Target string
}

// Images is the store's interface as the runtime consumes it. *Store
// implements it; every method is safe for concurrent use.
type Images interface {
	// Pull fetches ref from its registry unless the store holds the
	// same manifest digest already, verifying every blob's digest, and
	// returns the image. Errors name the reference and the cause
	// (not found, unauthorized, unreachable, digest mismatch).
	Pull(ctx context.Context, ref string, auth *Auth) (Image, error)
	// Import reads a docker-archive (`docker save`) or OCI-layout
	// tarball and returns the images it held. A corrupt or truncated
	// archive leaves nothing behind.
	Import(ctx context.Context, r io.Reader) ([]Image, error)
	// Get resolves a name ("busybox", "busybox:1.36",
	// "127.0.0.1:5000/x@sha256:…"), an image ID or an ID prefix of at
	// least 12 hex digits.
	Get(ref string) (Image, error)
	List() []Image
	// Remove drops the names of an image (or, given an ID, the image);
	// its blobs and layers go once nothing refers to them.
	Remove(ref string) error
	// Usage reports the image filesystem.
	Usage() (FilesystemUsage, error)
	// Mount prepares a fresh writable rootfs for container id from
	// image (an ID or name) and mounts it (overlayfs) at target, which
	// it creates. A second Mount of the same id reuses the upper
	// directory (a restarted container keeps nothing: callers Unmount
	// with remove=true between attempts).
	Mount(ctx context.Context, id, image, target string) (Rootfs, error)
	// Unmount unmounts target (a no-op if not mounted) and, with
	// remove, deletes id's upper and work directories.
	Unmount(id, target string, remove bool) error
	// Export writes the named images as a docker-archive tarball.
	Export(ctx context.Context, w io.Writer, refs ...string) error
}
