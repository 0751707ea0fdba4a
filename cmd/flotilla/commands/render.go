package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/admin"
)

// exitDiffers is the status of `flotilla render mwrs --diff` when the work differs from its
// render (kubectl diff's convention: 0 same, 1 differs, 2 error).
const exitDiffers = 1

func newRenderCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Show what the hub's controllers would write, without writing it",
	}
	cmd.AddCommand(newRenderMWRSCommand())
	return cmd
}

func newRenderMWRSCommand() *cobra.Command {
	var (
		kubeconfig, cluster, output, cacheDir string
		files                                 []string
		diff                                  bool
		timeout                               time.Duration
	)
	cmd := &cobra.Command{
		Use:     "mwrs NAMESPACE/NAME --cluster CLUSTER",
		Aliases: []string{"manifestworkreplicaset"},
		Short:   "Print the ManifestWork a cluster gets from a ManifestWorkReplicaSet and the override rules that shaped it",
		Long: `Render the ManifestWork that the hub's ManifestWorkReplicaSet controller writes for one
cluster, with the controller's own code: the template, then the ManifestWorkReplicaSetOverrides
naming the replica set (by spec.order, then name; rules as written), for the first placement
that selects the cluster. Nothing is written to the hub.

The output starts with comments naming the cluster, placement, decision group, revision and
template hash, and one line per rule that changed the work (override/rule, overrider, the
manifests it changed); then the ManifestWork with the labels and annotations the controller
writes (all but its write time, work.flotilla.dev/updated-at).

-f adds override objects from files, or replaces the hub's override of the same name: a
preview before 'kubectl apply'. Transform rules run their WasmPlugin locally: its module is
read from its ConfigMap and refused unless its sha256 is the plugin's status.digest (the module
the hub serves), and it runs with the hub's limits and determinism.

--diff prints a unified diff of the cluster's current ManifestWork spec against the render, then
the cluster's rollout state. Exit status: 0 same, 1 differs, 2 error. A rule that fails for the
cluster is an error (exit 2) naming the override, rule, cluster and manifest: the controller
leaves that cluster's work as it is and counts it Failed.`,
		Example: `  # what cluster1 gets from default/web, and which rules shaped it
  flotilla render mwrs default/web --cluster cluster1

  # before 'kubectl apply -f override.yaml': what would change on cluster1
  flotilla render mwrs default/web --cluster cluster1 -f override.yaml --diff`,
		Args: func(cmd *cobra.Command, args []string) error {
			return withStatus(exitError, cobra.ExactArgs(1)(cmd, args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cluster == "" {
				return withStatus(exitError, errors.New("--cluster is required: the ManagedCluster to render for"))
			}
			ctx, cancel := withTimeout(cmd.Context(), timeout)
			defer cancel()
			cmd.SetContext(ctx)
			return withStatus(exitError, timedOut(ctx, timeout, runRenderMWRS(cmd, args[0], kubeconfig, cluster, output, cacheDir, files, diff, timeout)))
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withStatus(exitError, err) })
	f := cmd.Flags()
	f.StringVar(&cluster, "cluster", "", "the ManagedCluster to render for (required)")
	f.BoolVar(&diff, "diff", false, "diff the cluster's current ManifestWork spec against the render (exit 1 when they differ)")
	f.StringArrayVarP(&files, "filename", "f", nil, "ManifestWorkReplicaSetOverride file or directory (- for standard input) added to, or replacing by name, the hub's; repeatable")
	f.StringVarP(&output, "output", "o", "yaml", "output format of the ManifestWork: yaml or json")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&cacheDir, "cache-dir", defaultWasmCacheDir(), "directory caching compiled transform plugins")
	f.DurationVar(&timeout, "timeout", defaultReadTimeout, "how long reading the hub and rendering may take (0: no limit)")
	return cmd
}

func runRenderMWRS(cmd *cobra.Command, arg, kubeconfig, cluster, output, cacheDir string, files []string, diff bool, timeout time.Duration) error {
	ns, name, ok := strings.Cut(arg, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("ManifestWorkReplicaSet %q: want NAMESPACE/NAME", arg)
	}
	if output != "yaml" && output != "json" {
		return fmt.Errorf("-o %s: want yaml or json", output)
	}
	o := admin.RenderOptions{Namespace: ns, Name: name, Cluster: cluster, Diff: diff,
		NewEngine: func(ctx context.Context) (*wasm.Engine, error) {
			return wasm.NewEngine(ctx, wasm.EngineOptions{CacheDir: cacheDir})
		}}
	for _, path := range files {
		ovs, err := admin.ReadOverrides(path, cmd.InOrStdin())
		if err != nil {
			return err
		}
		o.Overrides = append(o.Overrides, ovs...)
	}
	c, err := boundedHubClient(kubeconfig, timeout)
	if err != nil {
		return err
	}
	r, err := admin.RenderMWRS(cmd.Context(), c, o)
	if err != nil {
		return err
	}
	if !diff {
		return admin.WriteRendered(cmd.OutOrStdout(), r, output)
	}
	differs, err := admin.WriteRenderDiff(cmd.OutOrStdout(), r)
	if err != nil {
		return err
	}
	if differs {
		return withStatus(exitDiffers, fmt.Errorf("the ManifestWork of cluster %s differs from its render", cluster))
	}
	return nil
}

// defaultReadTimeout bounds the commands that read the hub and compute a view from it
// (render mwrs, rollout status): a hub that does not answer fails them instead of hanging.
const defaultReadTimeout = time.Minute

// boundedHubClient is a hub client whose every request, discovery included (which takes no
// context), gives up after timeout (0: never).
func boundedHubClient(kubeconfig string, timeout time.Duration) (client.Client, error) {
	cfg, err := loadRESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		cfg.Timeout = timeout
	}
	c, _, err := hubClientsForConfig(cfg)
	return c, err
}

// withTimeout bounds ctx by timeout; 0 leaves it unbounded.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// timedOut names --timeout in err when the command failed once its time was up: the context's
// deadline or a request's own timeout (discovery's errors do not wrap it) ended it.
func timedOut(ctx context.Context, timeout time.Duration, err error) error {
	deadline, ok := ctx.Deadline()
	if err != nil && ok && timeout > 0 && (errors.Is(ctx.Err(), context.DeadlineExceeded) || !time.Now().Before(deadline.Add(-timeout/10))) {
		return fmt.Errorf("gave up after %s (--timeout): %w", timeout, err)
	}
	return err
}
