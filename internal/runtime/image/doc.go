// Package image is the node's container image store: it pulls images
// from registries, imports and exports image tarballs, keeps each layer
// unpacked once, and mounts containers' root filesystems as overlays of
// those layers. The CRI server (internal/runtime) and `rudder images`
// use it through the Images interface in api.go.
//
// # Layout on disk
//
//	Root/
//	  index.json          images, names and unpacked layers (the only metadata)
//	  lock                flock'ed by every writer, in any process
//	  blobs/sha256/<hex>  manifests, configs and layer blobs, as fetched
//	  layers/<n>/         one unpacked layer; n is a small number, see below
//	  empty/              the lower dir of an image without layers
//	  rootfs/<id>/        a container's upper/ and work/ dirs, and image (its image ID)
//	  tmp/<pid>-…         work in progress: downloads, unpacks, imports
//
// Blobs are named by their digest, so two images that share a layer share
// its blob and its unpacked directory. index.json maps a layer's diffID
// (the digest of its uncompressed tar) to its directory number, each
// image ID (its config digest) to its manifest and layers, and each name
// ("docker.io/library/busybox:latest", "host/repo@sha256:…") to an ID.
// Names are normalised as docker does, so "busybox" is
// docker.io/library/busybox:latest.
//
// # How an image comes in
//
// Pull resolves the reference with go-containerregistry (plain HTTP for
// the hosts Config.Insecure names, loopback by default), picks
// linux/<GOARCH> from an index, and stops there if the manifest digest is
// held already: only the manifest was fetched. Otherwise, for each blob
// not held, it downloads into Root/tmp while hashing and renames into
// blobs/ only if the hash is the digest that names the blob; then it
// unpacks each layer not yet unpacked into a new temp dir, hashing the
// uncompressed stream, and keeps it only if that hash is the layer's
// diffID from the config. A mismatch is ErrDigestMismatch naming both
// digests, and nothing of the pull remains. Last, the commit: under the
// lock it re-reads the index, renames the temp layer dirs to the next
// free numbers, adds the image and its names, and writes the index.
//
// Import unpacks the whole tarball into Root/tmp first (a truncated or
// corrupt archive fails there, before the store is touched), tells the
// format by its top file — manifest.json for a docker-archive, index.json
// for an OCI layout — and then runs the same ingest and commit as a pull,
// with the archive's files as the blob source. A docker-archive carries
// no registry manifest, so one (OCI) is written for it. Export writes
// docker-archives with go-containerregistry's tarball writer.
//
// # Whiteouts
//
// A layer deletes a lower layer's file with an OCI whiteout entry,
// ".wh.<name>", and hides a whole lower directory with ".wh..wh..opq"
// inside it. Overlayfs reads other forms, so the unpacker converts them:
// ".wh.<name>" becomes a character device 0/0 named <name>, and the
// opaque marker becomes the xattr trusted.overlay.opaque=y on its
// directory. An image may not set trusted.overlay.* xattrs itself.
//
// The unpacker refuses any entry that would land outside the layer
// directory: a name climbing out ("../x"), a path through a symlink an
// earlier entry made ("evil -> /" then "evil/x"), a hardlink to a path
// outside. Files get their modes (setuid included), owners, xattrs and
// mtimes; directories get theirs after their children are written.
//
// # Mounting, and the lowerdir limit
//
// Mount writes rootfs/<id>/image (which keeps the image from removal:
// Remove fails with ErrInUse while it exists), then mounts
//
//	overlay lowerdir=<top layer>:…:<bottom layer>,upperdir=…/upper,workdir=…/work
//
// mount(2) copies at most one page (4096 bytes) of options, which is why
// layer directories are short numbers. When even so the absolute paths
// do not fit (many layers, or a long Root), the mount is made with
// lowerdirs relative to Root/layers ("12:11:…") from a locked OS thread
// that has unshared its filesystem attributes (CLONE_FS) and changed
// directory there; that thread is discarded afterwards, so no other
// goroutine sees the changed working directory. An image without layers
// mounts the empty/ directory as its lower layer. Unmount with remove
// deletes the upper and work directories.
//
// # Several processes, one Root
//
// `rudder images import` and a running agent share one Root. Every write
// of index.json happens under an exclusive flock of Root/lock, after
// re-reading the index, and replaces the file with a temp file + fsync +
// rename. Readers keep the parsed index and re-read it when the file's
// inode, size or mtime changed, so an image imported by another process
// is seen by the next Get. Blobs and layers are written outside the lock
// (a long download never blocks the other process); the commit checks
// under the lock that everything the image needs still exists, and
// retries the pull if a concurrent Remove took a blob away meanwhile.
// Remove deletes only blobs and layers that the removed image referred
// to and that no remaining image refers to.
//
// # Crash safety
//
// Nothing is ever written in place: blobs and the index through temp file
// and rename, layers through a temp dir renamed to layers/<n> only when
// complete (after a syncfs), so a crash leaves the old state plus files
// in tmp/. Open removes tmp/ entries of processes that are no longer
// running, layer dirs the index does not name (a crash in a Remove), and
// unreferenced blobs older than an hour (a pull that died before its
// commit).
//
// # Usage
//
//	s, err := image.Open(image.Config{Root: "/var/lib/rudder/agent/images"})
//	img, err := s.Pull(ctx, "busybox:1.36", nil)
//	rootfs, err := s.Mount(ctx, containerID, img.ID, bundle+"/rootfs")
//	…                                             // run the container
//	err = s.Unmount(containerID, rootfs.Target, true)
//
// Tests build images with the imagetest package (busybox from the host,
// layers from tar entries, a loopback registry).
package image
