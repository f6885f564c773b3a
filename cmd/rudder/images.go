package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/runtime/image"
	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

// imagesCommand is `rudder images`: the node's image store, offline (no
// registry needed), sharing <data-dir>/agent/images with a running agent.
func imagesCommand() *cobra.Command {
	var dataDir, node string
	stores := func() ([]nodeStore, error) { return openImageStores(dataDir, node) }
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Manage the nodes' container images (import, ls, rm, export)",
		Long: `Manage the container images of this machine's nodes. The store is shared
with a running agent, so an imported image is at once usable by pods
(with imagePullPolicy: IfNotPresent or Never):

  docker save busybox:1.36 -o bb.tar      # on a machine with docker
  rudder images import bb.tar
  rudder images ls
  rudder images export -o out.tar busybox:1.36
  rudder images rm busybox:1.36

import reads docker-archive (docker save) and OCI-layout tarballs, plain or
gzip-compressed; "-" reads standard input.

Each node has its own store. For "rudder up" it is <data-dir>/agent/images;
for "rudder up --nodes N" each node's, <data-dir>/nodes/node-N/agent/images:
import, busybox and rm then act on every node, ls lists every node's
images with a NODE column, and export reads the first node's. --node
picks one node.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", "/var/lib/rudder", "rudder's data directory; images live in <data-dir>/agent/images, or per node in <data-dir>/nodes/<node>/agent/images")
	cmd.PersistentFlags().StringVar(&node, "node", "", "with `rudder up --nodes`: the one node to act on (default: every node)")

	importCmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Import docker-archive or OCI-layout tarballs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ss, err := stores()
			if err != nil {
				return err
			}
			for _, a := range args {
				// Standard input is read once, for every node.
				path, cleanup, err := rereadable(a, cmd.InOrStdin(), len(ss) > 1)
				if err != nil {
					return fmt.Errorf("%s: %w", a, err)
				}
				for _, s := range ss {
					imgs, err := importPath(cmd.Context(), s.store, path, cmd.InOrStdin())
					if err != nil {
						cleanup()
						return fmt.Errorf("%s%s: %w", s.prefix(ss), a, err)
					}
					for _, img := range imgs {
						names := strings.Join(append(img.RepoTags, img.RepoDigests...), " ")
						if names == "" {
							names = "<none>"
						}
						fmt.Fprintf(cmd.OutOrStdout(), "%simported %s %s\n", s.prefix(ss), shortID(img.ID), names)
					}
				}
				cleanup()
			}
			return nil
		},
	}
	lsCmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List images",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ss, err := stores()
			if err != nil {
				return err
			}
			return printImages(cmd.OutOrStdout(), ss)
		},
	}
	rmCmd := &cobra.Command{
		Use:   "rm REF...",
		Short: "Remove images (a tag, or by ID the image with all its names)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ss, err := stores()
			if err != nil {
				return err
			}
			var errs []error
			for _, s := range ss {
				for _, a := range args {
					if err := s.store.Remove(a); err != nil {
						errs = append(errs, fmt.Errorf("%s%w", s.prefix(ss), err))
						continue
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%sremoved %s\n", s.prefix(ss), a)
				}
			}
			return errors.Join(errs...)
		},
	}
	var out string
	exportCmd := &cobra.Command{
		Use:   "export -o FILE REF...",
		Short: "Write images as one docker-archive tarball",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ss, err := stores()
			if err != nil {
				return err
			}
			s := ss[0].store
			if out == "-" {
				return s.Export(cmd.Context(), cmd.OutOrStdout(), args...)
			}
			return exportFile(cmd.Context(), s, out, args)
		},
	}
	exportCmd.Flags().StringVarP(&out, "output", "o", "", `file to write ("-" for standard output)`)
	_ = exportCmd.MarkFlagRequired("output")
	busyboxCmd := &cobra.Command{
		Use:   "busybox [NAME]",
		Short: "Build an image from the host's static /bin/busybox and import it (default name busybox:local)",
		Long: `Build a one-layer image from the host's static busybox (Debian's
busybox-static: /bin/busybox and its applets as /bin symlinks, /etc/passwd
and /etc/group) and import it: a first image for machines that reach no
registry.

  apt-get install busybox-static
  rudder images busybox
  kubectl run hello --image=busybox:local -- sh -c 'echo hi; sleep 3600'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tag := "busybox:local"
			if len(args) == 1 {
				tag = args[0]
			}
			tmp, err := os.MkdirTemp("", "rudder-busybox-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			path := filepath.Join(tmp, "busybox.tar")
			if err := imagetest.WriteBusyboxArchive(path, tag); err != nil {
				return err
			}
			ss, err := stores()
			if err != nil {
				return err
			}
			for _, s := range ss {
				imgs, err := importPath(cmd.Context(), s.store, path, nil)
				if err != nil {
					return fmt.Errorf("%s%w", s.prefix(ss), err)
				}
				for _, img := range imgs {
					fmt.Fprintf(cmd.OutOrStdout(), "%simported %s %s\n", s.prefix(ss), shortID(img.ID), strings.Join(img.RepoTags, " "))
				}
			}
			return nil
		},
	}
	cmd.AddCommand(importCmd, lsCmd, rmCmd, exportCmd, busyboxCmd)
	return cmd
}

func importPath(ctx context.Context, s *image.Store, path string, stdin io.Reader) ([]image.Image, error) {
	if path == "-" {
		return s.Import(ctx, stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return s.Import(ctx, f)
}

// exportFile writes beside path and renames, so a failed export leaves
// no partial file.
func exportFile(ctx context.Context, s *image.Store, path string, refs []string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := s.Export(ctx, tmp, refs...); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// printImages writes the table crictl images prints: one row per tag,
// with a NODE column first when there are several nodes.
func printImages(w io.Writer, ss []nodeStore) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	col := func(s nodeStore) string {
		if len(ss) > 1 {
			return s.node + "\t"
		}
		return ""
	}
	if len(ss) > 1 {
		fmt.Fprint(tw, "NODE\t")
	}
	fmt.Fprintln(tw, "IMAGE\tTAG\tIMAGE ID\tSIZE")
	for _, s := range ss {
		for _, img := range s.store.List() {
			size := humanSize(img.Size)
			if len(img.RepoTags) == 0 {
				repo := "<none>"
				if len(img.RepoDigests) > 0 {
					repo, _, _ = strings.Cut(img.RepoDigests[0], "@")
				}
				fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", col(s), repo, "<none>", shortID(img.ID), size)
				continue
			}
			for _, t := range img.RepoTags {
				i := strings.LastIndex(t, ":")
				fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", col(s), t[:i], t[i+1:], shortID(img.ID), size)
			}
		}
	}
	return tw.Flush()
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 13 {
		id = id[:13]
	}
	return id
}

// humanSize prints decimal units with three significant digits, as
// crictl does ("4.26MB").
func humanSize(n uint64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	f := float64(n)
	i := 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	return fmt.Sprintf("%.3g%s", f, units[i])
}
