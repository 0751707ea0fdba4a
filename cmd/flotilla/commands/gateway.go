package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla-dev/flotilla/hub/admin"
)

// gatewayHelp is what both commands say about the path they use.
const gatewayHelp = `Requests go to the hub API server, which checks the hub user's RBAC on
clustergateways/proxy (group cluster.core.oam.dev, resourceNames the cluster), and through the
hub's cluster-gateway and the cluster-proxy tunnel to the managed cluster's API server, where
they act as the ServiceAccount cluster-gateway in open-cluster-management-managed-serviceaccount:
what it may do is what the managed cluster's RBAC grants it (nothing at first; grant it with a
ManifestWork). The hub must serve the add-ons (flotilla hub --addons
cluster-proxy,managed-serviceaccount,cluster-gateway) and have them enabled on the cluster
(flotilla addon enable cluster-proxy managed-serviceaccount cluster-gateway --clusters C).`

func newKubeconfigCommand() *cobra.Command {
	var (
		hubKubeconfig, cluster, output string
		noCheck                        bool
	)
	cmd := &cobra.Command{
		Use:   "kubeconfig --cluster C",
		Short: "Write a kubeconfig that reaches managed cluster C through the hub's cluster-gateway",
		Long: `Write a kubeconfig for managed cluster C's API server through the hub: the hub kubeconfig's
current context (its credentials, CA and proxy-url) with the server
<hub server>/apis/cluster.core.oam.dev/v1alpha1/clustergateways/C/proxy, and its cluster, user
and context named C (the seeds' walk-through edits the hub kubeconfig so by hand). It first
reads ClusterGateway C and fails, saying how to enable it, when there is none (--no-check
skips that). The kubeconfig goes to standard output, or to -o FILE written with mode 0600
(it holds the hub credentials).

` + gatewayHelp,
		Example: `  flotilla kubeconfig --cluster cluster1 -o cluster1.kubeconfig
  KUBECONFIG=cluster1.kubeconfig kubectl get pods -A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cluster == "" {
				return errors.New("--cluster is required")
			}
			b, err := gatewayKubeconfig(cmd.Context(), hubKubeconfig, cluster, !noCheck)
			if err != nil {
				return err
			}
			if output == "" || output == "-" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return writePrivate(output, b)
		},
	}
	f := cmd.Flags()
	f.StringVar(&hubKubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&cluster, "cluster", "", "the managed cluster (required)")
	f.StringVarP(&output, "output", "o", "", "file to write the kubeconfig to, mode 0600 (default: standard output)")
	f.BoolVar(&noCheck, "no-check", false, "do not check that the cluster has a ClusterGateway")
	return cmd
}

func newProxyCommand() *cobra.Command {
	var hubKubeconfig string
	cmd := &cobra.Command{
		Use:   "proxy C -- CMD [ARGS...]",
		Short: "Run a command with KUBECONFIG reaching managed cluster C through the hub's cluster-gateway",
		Long: `Run CMD with KUBECONFIG set to a private temporary kubeconfig for managed cluster C (what
flotilla kubeconfig --cluster C writes), passing standard input, output and error through.
flotilla proxy exits with CMD's exit status and deletes the kubeconfig. -- is required.

` + gatewayHelp,
		Example: `  flotilla proxy cluster1 -- kubectl get pods -A`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash != 1 || len(args) < 2 {
				return errors.New("usage: flotilla proxy C -- CMD [ARGS...] (one cluster, then -- and the command)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProxy(cmd.Context(), hubKubeconfig, args[0], args[1:], cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&hubKubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	return cmd
}

// gatewayKubeconfig loads the hub kubeconfig (path, or the default rules), checks cluster has a
// ClusterGateway when check is set, and returns the serialized gateway kubeconfig, with every
// file it refers to embedded.
func gatewayKubeconfig(ctx context.Context, path, cluster string, check bool) ([]byte, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	hub, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %q: %w", path, err)
	}
	if err := clientcmdapi.FlattenConfig(hub); err != nil {
		return nil, fmt.Errorf("kubeconfig %q: embedding the files it names: %w", path, err)
	}
	if check {
		cfg, err := clientcmd.NewDefaultClientConfig(*hub, nil).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %q: %w", path, err)
		}
		if err := admin.CheckGateway(ctx, cfg, cluster); err != nil {
			return nil, err
		}
	}
	kc, err := admin.GatewayKubeconfig(hub, cluster)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q: %w", path, err)
	}
	return clientcmd.Write(*kc)
}

// writePrivate writes b to path with mode 0600 (an existing file is truncated and made 0600).
func writePrivate(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// runProxy runs argv with KUBECONFIG pointing at cluster's gateway kubeconfig in a private
// temporary file, deleted afterwards; CMD's exit status becomes the command's.
func runProxy(ctx context.Context, hubKubeconfig, cluster string, argv []string, in io.Reader, out, errw io.Writer) error {
	b, err := gatewayKubeconfig(ctx, hubKubeconfig, cluster, true)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "flotilla-proxy-"+cluster+"-*.kubeconfig") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env = append(os.Environ(), "KUBECONFIG="+f.Name())
	c.Stdin, c.Stdout, c.Stderr = in, out, errw
	err = c.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() > 0 {
		return withStatus(exit.ExitCode(), fmt.Errorf("%s exited with status %d", argv[0], exit.ExitCode()))
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", argv[0], err)
	}
	return nil
}
