package commands

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/kubeconfig"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
)

// tokenFlags are the flags of every command that prints a join command.
type tokenFlags struct {
	duration          time.Duration
	useBootstrapToken bool
	hubAPIServer      string
}

func (f *tokenFlags) add(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.duration, "duration", bootstrap.DefaultJoinTokenTTL,
		"how long the join token stays usable (a ServiceAccount token at least 10m; a bootstrap token any positive duration)")
	cmd.Flags().BoolVar(&f.useBootstrapToken, "use-bootstrap-token", false,
		"issue a Kubernetes bootstrap token (user system:bootstrap:<id>, group system:bootstrappers:managedcluster) instead of a token of the ServiceAccount open-cluster-management/agent-registration-bootstrap; the hub API server needs --enable-bootstrap-token-auth")
	cmd.Flags().StringVar(&f.hubAPIServer, "hub-apiserver", "",
		"the hub API server URL as managed clusters reach it (default: the server of --kubeconfig)")
}

// joinInfo is an issued join token with what a managed cluster needs besides it.
type joinInfo struct {
	bootstrap.Token
	token, server string
	ca            []byte
}

// command is the `flotilla join` command that uses the token.
func (j joinInfo) command() string {
	return fmt.Sprintf("flotilla join --hub-token %s --hub-apiserver %s --hub-ca-data %s --cluster-name <cluster_name>",
		j.token, j.server, base64.StdEncoding.EncodeToString(j.ca))
}

// kubeconfig is the bootstrap kubeconfig for the token, as the klusterlet chart's
// bootstrapHubKubeconfig takes it.
func (j joinInfo) kubeconfig() ([]byte, error) {
	return kubeconfig.Bootstrap(kubeconfig.Params{Server: j.server, CA: j.ca, Token: j.token})
}

// issueJoin issues a join token on the hub of cfg.
func issueJoin(ctx context.Context, cfg *rest.Config, f tokenFlags) (joinInfo, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return joinInfo{}, fmt.Errorf("hub client: %w", err)
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return joinInfo{}, fmt.Errorf("reading the hub's CA file %s: %w", cfg.CAFile, err)
		}
	}
	if len(ca) == 0 {
		return joinInfo{}, fmt.Errorf("the kubeconfig of hub %s carries no CA: the join command needs it", cfg.Host)
	}
	kind := bootstrap.ServiceAccountToken
	if f.useBootstrapToken {
		kind = bootstrap.BootstrapToken
	}
	token, t, err := bootstrap.IssueToken(ctx, kube, bootstrap.TokenOptions{TTL: f.duration, Kind: kind})
	if err != nil {
		return joinInfo{}, err
	}
	server := f.hubAPIServer
	if server == "" {
		server = cfg.Host
	}
	return joinInfo{Token: t, token: token, server: server, ca: ca}, nil
}

func newGetTokenCommand(kubeconfig *string) *cobra.Command {
	var (
		f              tokenFlags
		kubeconfigFile string
	)
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue a time-limited join token and print the flotilla join command that uses it",
		Long: `Issue a join token for managed clusters and print the exact command to run on each of
them (replace <cluster_name>), as clusteradm get token does.

The token authenticates as the hub's bootstrap identity, which may only create its cluster's
ManagedCluster and registration CSR; the hub's admin still accepts each cluster (flotilla
accept). By default it is a token of the ServiceAccount
open-cluster-management/agent-registration-bootstrap bound to a Secret of its own; with
--use-bootstrap-token a Kubernetes bootstrap token. Either expires after --duration and can be
revoked sooner (flotilla token list, flotilla token revoke ID; the hub refuses a revoked token
within about 10 s). Issuing a token deletes the Secrets of tokens that have expired.
--output-bootstrap-kubeconfig also writes the kubeconfig that join would build, for
helm install ... --set-file bootstrapHubKubeconfig=FILE.`,
		Example: `  flotilla get token --kubeconfig hub.kubeconfig
  flotilla get token --duration 15m --use-bootstrap-token
  flotilla get token --hub-apiserver https://hub.example.com:6443`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadRESTConfig(*kubeconfig)
			if err != nil {
				return err
			}
			j, err := issueJoin(cmd.Context(), cfg, f)
			if err != nil {
				return err
			}
			if kubeconfigFile != "" {
				kc, err := j.kubeconfig()
				if err != nil {
					return err
				}
				if err := os.WriteFile(kubeconfigFile, kc, 0o600); err != nil {
					return fmt.Errorf("--output-bootstrap-kubeconfig: %w", err)
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "token %s (%s) expires %s; run on each managed cluster, with its name:\n", j.ID, j.Kind, j.Expires.Format(time.RFC3339))
			fmt.Fprintln(cmd.OutOrStdout(), j.command())
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&kubeconfigFile, "output-bootstrap-kubeconfig", "",
		"also write the bootstrap kubeconfig for the token to this file (mode 0600), for the klusterlet chart's bootstrapHubKubeconfig")
	return cmd
}

func newTokenCommand() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "List and revoke the join tokens flotilla get token issued",
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the join tokens that have not expired (it only reads: get token and token revoke delete expired tokens' Secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, kube, err := hubClients(kubeconfig)
			if err != nil {
				return err
			}
			tokens, err := bootstrap.ListTokens(cmd.Context(), kube)
			if err != nil {
				return err
			}
			return writeTokens(cmd.OutOrStdout(), tokens, time.Now())
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "revoke ID...",
		Short: "Revoke join tokens (the ID column of flotilla token list); the hub refuses them within about 10 s",
		Long: `Revoke join tokens by deleting the Secret each is bound to (the ID column of flotilla token
list); the Secrets of tokens that have expired are deleted too.

The hub's kube-apiserver keeps a successful token authentication in its cache for 10 seconds,
so a token that authenticated just before it was revoked keeps working until that entry
expires: the hub refuses a revoked token within about 10 s, not at once.`,
		Example: `  flotilla token revoke k3x9q2`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			_, kube, err := hubClients(kubeconfig)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if err := bootstrap.RevokeToken(cmd.Context(), kube, id); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "token %s revoked\n", id)
			}
			return nil
		},
	})
	return cmd
}

func writeTokens(w io.Writer, tokens []bootstrap.Token, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tIDENTITY\tEXPIRES\tTTL")
	for _, t := range tokens {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Kind, t.Identity, t.Expires.Format(time.RFC3339), t.Expires.Sub(now).Round(time.Second))
	}
	return tw.Flush()
}
