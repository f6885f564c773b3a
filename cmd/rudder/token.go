package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/auth"
)

// tokenCommand manages bootstrap tokens, as `kubeadm token` does: each is
// a Secret bootstrap-token-<id> in kube-system that a joining node
// authenticates with (`rudder agent --token <id>.<secret>`).
func tokenCommand() *cobra.Command {
	var kubeconfig, dataDir string
	client := func() (kubernetes.Interface, error) {
		path := kubeconfig
		if path == "" && dataDir != "" {
			path = filepath.Join(dataDir, "admin.kubeconfig")
		}
		rc, err := clientConfig(path, "rudder-token")
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(rc)
	}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and delete the bootstrap tokens nodes join with",
		Long: `Bootstrap tokens let a new node join: the node presents <id>.<secret>,
asks for a client certificate of its own, and has it approved and signed
automatically. Each token is a Secret of type bootstrap.kubernetes.io/token
named bootstrap-token-<id> in kube-system, the layout kubeadm uses, so
kubeadm-style tools can manage them too.

  rudder token create --data-dir /var/lib/rudder --ttl 2h
  rudder token list --data-dir /var/lib/rudder
  rudder token delete abcdef

The API is reached with --kubeconfig, else <data-dir>/admin.kubeconfig,
else $KUBECONFIG or ~/.kube/config.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of a cluster administrator")
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", "", "the server's data directory (uses its admin.kubeconfig)")

	var (
		ttl         time.Duration
		description string
		groups      []string
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a bootstrap token and print it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			token, err := createBootstrapToken(cmd.Context(), c, ttl, description, groups, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), token)
			return nil
		},
	}
	create.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token is valid (0: it never expires)")
	create.Flags().StringVar(&description, "description", "", "what the token is for")
	create.Flags().StringSliceVar(&groups, "groups", []string{auth.BootstrapDefaultNodeGroup}, "extra groups the token's holder is in (each system:bootstrappers:...)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List the bootstrap tokens",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			return listBootstrapTokens(cmd.Context(), c, cmd.OutOrStdout(), time.Now())
		},
	}
	del := &cobra.Command{
		Use:   "delete ID|TOKEN...",
		Short: "Delete bootstrap tokens, named by ID or by the whole token",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			for _, a := range args {
				id, err := deleteBootstrapToken(cmd.Context(), c, a)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "bootstrap token %q deleted\n", id)
			}
			return nil
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
}

const tokenAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// randomTokenString draws n characters of [a-z0-9] from crypto/rand,
// uniformly (rand.Int rejects the biased tail).
func randomTokenString(n int) (string, error) {
	var b strings.Builder
	max := big.NewInt(int64(len(tokenAlphabet)))
	for range n {
		i, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b.WriteByte(tokenAlphabet[i.Int64()])
	}
	return b.String(), nil
}

// createBootstrapToken writes a new token's Secret as kubeadm does and
// returns "<id>.<secret>". A ttl of 0 means no expiration.
func createBootstrapToken(ctx context.Context, c kubernetes.Interface, ttl time.Duration, description string, groups []string, now time.Time) (string, error) {
	if ttl < 0 {
		return "", fmt.Errorf("--ttl %v is negative", ttl)
	}
	if err := auth.ValidateBootstrapGroups(groups); err != nil {
		return "", err
	}
	// An ID already taken is drawn again; with 36^6 IDs a few tries do.
	for range 5 {
		id, err := randomTokenString(6)
		if err != nil {
			return "", err
		}
		secret, err := randomTokenString(16)
		if err != nil {
			return "", err
		}
		data := map[string]string{
			auth.BootstrapTokenIDKey:           id,
			auth.BootstrapTokenSecretKey:       secret,
			auth.BootstrapTokenUsageAuthKey:    "true",
			auth.BootstrapTokenUsageSigningKey: "true",
		}
		if description != "" {
			data[auth.BootstrapTokenDescriptionKey] = description
		}
		if ttl > 0 {
			data[auth.BootstrapTokenExpirationKey] = now.Add(ttl).UTC().Format(time.RFC3339)
		}
		if len(groups) > 0 {
			data[auth.BootstrapTokenExtraGroupsKey] = strings.Join(groups, ",")
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: auth.BootstrapTokenSecretPrefix + id, Namespace: auth.BootstrapTokenNamespace},
			Type:       auth.BootstrapTokenSecretType,
			StringData: data,
		}
		_, err = c.CoreV1().Secrets(auth.BootstrapTokenNamespace).Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("creating bootstrap token: %w", err)
		}
		return id + "." + secret, nil
	}
	return "", errors.New("creating bootstrap token: every token ID drawn was taken")
}

// listBootstrapTokens prints kubeadm's table. The secret half is never
// printed: the ID names the token, and anyone who may read the Secret can
// see the rest.
func listBootstrapTokens(ctx context.Context, c kubernetes.Interface, w io.Writer, now time.Time) error {
	list, err := c.CoreV1().Secrets(auth.BootstrapTokenNamespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("type", string(auth.BootstrapTokenSecretType)).String(),
	})
	if err != nil {
		return fmt.Errorf("listing bootstrap tokens: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "ID\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
	for i := range list.Items {
		s := &list.Items[i]
		id := string(s.Data[auth.BootstrapTokenIDKey])
		if s.Type != auth.BootstrapTokenSecretType || s.Name != auth.BootstrapTokenSecretPrefix+id {
			continue
		}
		ttl, expires := "<forever>", "<never>"
		if raw := string(s.Data[auth.BootstrapTokenExpirationKey]); raw != "" {
			expires = raw
			if exp, err := time.Parse(time.RFC3339, raw); err != nil || !now.Before(exp) {
				ttl = "<expired>"
			} else {
				ttl = exp.Sub(now).Round(time.Minute).String()
			}
		}
		var usages []string
		for _, u := range []string{"authentication", "signing"} {
			if string(s.Data["usage-bootstrap-"+u]) == "true" {
				usages = append(usages, u)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", id, ttl, expires, orNone(strings.Join(usages, ",")),
			orNone(string(s.Data[auth.BootstrapTokenDescriptionKey])), orNone(string(s.Data[auth.BootstrapTokenExtraGroupsKey])))
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// deleteBootstrapToken deletes the token named by its ID or by the whole
// "<id>.<secret>" and returns the ID.
func deleteBootstrapToken(ctx context.Context, c kubernetes.Interface, arg string) (string, error) {
	id := arg
	if tid, _, ok := auth.ParseBootstrapToken(arg); ok {
		id = tid
	} else if len(id) != 6 || strings.Trim(id, tokenAlphabet) != "" {
		return "", fmt.Errorf("%q is neither a token ID ([a-z0-9]{6}) nor a token (<id>.<secret>)", arg)
	}
	err := c.CoreV1().Secrets(auth.BootstrapTokenNamespace).Delete(ctx, auth.BootstrapTokenSecretPrefix+id, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("bootstrap token %q not found", id)
	}
	if err != nil {
		return "", fmt.Errorf("deleting bootstrap token %q: %w", id, err)
	}
	return id, nil
}
