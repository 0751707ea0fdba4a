package commands

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// valuesFlags are Helm's --values/--set for the commands that render a chart.
type valuesFlags struct {
	files []string
	sets  []string
}

func (f *valuesFlags) add(cmd *cobra.Command, chart string) {
	cmd.Flags().StringArrayVarP(&f.files, "values", "f", nil, "a values file for the "+chart+" Helm chart (repeatable; later files win)")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "a chart value as Helm's --set takes it, e.g. replicas=2 or flags.kube-api-qps=100 (repeatable; wins over --values)")
}

// values reads the files, then the --set expressions, each on top of the one before.
func (f *valuesFlags) values() (map[string]any, error) {
	out := map[string]any{}
	for _, file := range f.files {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--values %s: %w", file, err)
		}
		v := map[string]any{}
		if err := yaml.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("--values %s: %w", file, err)
		}
		out = install.MergeValues(out, v)
	}
	for _, s := range f.sets {
		if err := strvals.ParseInto(s, out); err != nil {
			return nil, fmt.Errorf("--set %s: %w", s, err)
		}
	}
	return out, nil
}

func newInitCommand() *cobra.Command {
	var (
		kubeconfig, joinFile string
		wait, dryRun         bool
		timeout              time.Duration
		vals                 valuesFlags
		token                tokenFlags
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Install a Flotilla hub on the cluster of --kubeconfig and print the command that joins clusters to it",
		Long: `Install the hub, as clusteradm init does: the chart charts/flotilla-hub (carried by this
binary) rendered with --values/--set and applied with server-side apply: the CRDs, namespace
open-cluster-management-hub, the hub's ServiceAccount and RBAC, the hub Deployment with its
webhook and metrics Services, and the ClusterManager cluster-manager the hub takes its
feature gates from. The hub then installs the bootstrap identities (ServiceAccount
open-cluster-management/agent-registration-bootstrap, the alias cluster-bootstrap, the
bootstrap-token group), its default Wasm plugins and Rego policies.

With --wait (the default) init waits, reporting progress, until the hub reports the
ClusterManager applied, then issues a join token (see flotilla get token) and prints the
flotilla join command. Running init again upgrades the install in place. --dry-run prints the
manifests instead. helm install flotilla-hub charts/flotilla-hub -n open-cluster-management-hub
--create-namespace installs the same manifests.`,
		Example: `  flotilla init --kubeconfig hub.kubeconfig
  flotilla init --set replicas=2 --set image.tag=0.1.0 --output-join-command-file join.sh
  flotilla init --dry-run > hub.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			values, err := vals.values()
			if err != nil {
				return err
			}
			objs, err := install.Render(install.HubChart, install.HubChart, install.HubNamespace, values)
			if err != nil {
				return err
			}
			if dryRun {
				return install.WriteYAML(cmd.OutOrStdout(), objs)
			}
			cfg, err := loadRESTConfig(kubeconfig)
			if err != nil {
				return err
			}
			progress := func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), s) }
			progress(fmt.Sprintf("applying %d objects of chart %s to %s", len(objs), install.HubChart, cfg.Host))
			if err := install.Apply(cmd.Context(), cfg, objs); err != nil {
				return err
			}
			if !wait {
				progress("installed; once the hub is ready, flotilla get token prints the join command")
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if err := waitForHub(ctx, cfg, objs, progress); err != nil {
				return err
			}
			j, err := issueJoin(cmd.Context(), cfg, token)
			if err != nil {
				return err
			}
			line := j.command()
			if joinFile != "" {
				if err := os.WriteFile(joinFile, []byte(line+"\n"), 0o600); err != nil {
					return fmt.Errorf("--output-join-command-file: %w", err)
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "The hub is ready. Join token %s expires %s. On each managed cluster, with its name:\n", j.ID, j.Expires.Format(time.RFC3339))
			fmt.Fprintln(cmd.OutOrStdout(), line)
			fmt.Fprintln(cmd.ErrOrStderr(), "then accept it here: flotilla accept --clusters <cluster_name>")
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub cluster (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().BoolVar(&wait, "wait", true, "wait until the hub is ready and print the join command")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the manifests instead of applying them")
	cmd.Flags().StringVar(&joinFile, "output-join-command-file", "", "also write the join command to this file (mode 0600: it holds a token)")
	vals.add(cmd, install.HubChart)
	token.add(cmd)
	return cmd
}

// waitForHub waits until the hub that objs install is ready: it reported its ClusterManager
// applied for the current generation (or, installed without one, it created the bootstrap
// identity), reporting the Deployment's progress on the way.
func waitForHub(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, progress func(string)) error {
	c, _, err := hubClientsForConfig(cfg)
	if err != nil {
		return err
	}
	var cmName string
	var deploy client.ObjectKey
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterManager":
			cmName = o.GetName()
		case "Deployment":
			deploy = client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}
		}
	}
	last := ""
	report := func(s string) {
		if s != last {
			progress(s)
			last = s
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if deploy.Name != "" {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, deploy, d); err == nil {
				want := int32(1)
				if d.Spec.Replicas != nil {
					want = *d.Spec.Replicas
				}
				report(fmt.Sprintf("hub Deployment %s: %d/%d replicas ready", deploy, d.Status.ReadyReplicas, want))
			}
		}
		ready, why := hubReady(ctx, c, cmName)
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the hub: %w; %s (kubectl -n %s logs deploy/%s)", ctx.Err(), why, deploy.Namespace, deploy.Name)
		case <-tick.C:
		}
	}
}

func hubReady(ctx context.Context, c client.Client, cmName string) (bool, string) {
	sa := &corev1.ServiceAccount{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: rbac.BootstrapNamespace, Name: rbac.BootstrapServiceAccount}, sa); err != nil {
		return false, fmt.Sprintf("the bootstrap ServiceAccount %s/%s is not there yet", rbac.BootstrapNamespace, rbac.BootstrapServiceAccount)
	}
	if cmName == "" {
		return true, ""
	}
	cm := &operatorv1.ClusterManager{}
	if err := c.Get(ctx, client.ObjectKey{Name: cmName}, cm); err != nil {
		return false, fmt.Sprintf("reading ClusterManager %s: %v", cmName, err)
	}
	if cm.Status.ObservedGeneration != cm.Generation {
		return false, fmt.Sprintf("the hub has not reported ClusterManager %s generation %d yet", cmName, cm.Generation)
	}
	if !meta.IsStatusConditionTrue(cm.Status.Conditions, operatorv1.ConditionClusterManagerApplied) {
		return false, fmt.Sprintf("ClusterManager %s is not Applied", cmName)
	}
	return true, ""
}
