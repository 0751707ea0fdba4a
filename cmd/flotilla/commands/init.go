package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
	hubop "github.com/flotilla-dev/flotilla/hub/operator"
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

// Hub topologies (--hub-topology): the chart's topology value.
const (
	topologySplit  = "Split"
	topologySingle = "Single"
)

// hubInstallValues are the values init applies the hub chart with: the user's, with the
// operator render and the topology over them.
func hubInstallValues(user map[string]any, topology string) (map[string]any, error) {
	if topology != topologySplit && topology != topologySingle {
		return nil, fmt.Errorf("--hub-topology %q: want %s or %s", topology, topologySplit, topologySingle)
	}
	return install.MergeValues(user, map[string]any{"render": "operator", "topology": topology}), nil
}

// renderHubInstall renders what init applies: the hub chart's render operator, in the
// operator's namespace (Render adds that Namespace first).
func renderHubInstall(values map[string]any) ([]*unstructured.Unstructured, error) {
	return install.Render(install.HubChart, install.HubChart, hubop.OperatorNamespace, values)
}

// installHub applies objs (renderHubInstall) to cfg and, with timeout > 0, waits for the
// hub they describe (waitForHub).
func installHub(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, timeout time.Duration, progress func(string)) error {
	progress(fmt.Sprintf("applying %d objects of chart %s to %s", len(objs), install.HubChart, cfg.Host))
	if err := install.Apply(ctx, cfg, objs); err != nil {
		return err
	}
	if timeout <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return waitForHub(ctx, cfg, objs, progress)
}

func newInitCommand() *cobra.Command {
	var (
		kubeconfig, joinFile string
		topology             string
		wait, dryRun         bool
		timeout              time.Duration
		vals                 valuesFlags
		token                tokenFlags
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Install a Flotilla hub on the cluster of --kubeconfig and print the command that joins clusters to it",
		Long: `Install the hub, as clusteradm init does: the chart charts/flotilla-hub (carried by this
binary) rendered with --values/--set, render operator and topology --hub-topology, and applied
with server-side apply: the CRDs, namespaces open-cluster-management and
open-cluster-management-hub, the hub operator (Deployment open-cluster-management/cluster-manager,
container registration-operator, as OCM's) with its ServiceAccount and RBAC, the ClusterManager
cluster-manager and the ConfigMap open-cluster-management/flotilla-hub-values holding the
Flotilla-only chart values. The operator (flotilla operator hub) then deploys the hub from
the ClusterManager and that ConfigMap, and reports in the ClusterManager's status.

--hub-topology Split (the default) runs the hub as OCM's six components, each its own
Deployment in open-cluster-management-hub named as OCM's (cluster-manager-registration-controller,
-registration-webhook, -work-webhook, -work-controller, -placement-controller,
-addon-manager-controller), which clusteradm get hub-info lists; Single runs them in one
Deployment flotilla-hub, for small clusters.

With --wait (the default) init waits, reporting progress, until the ClusterManager reports
Applied=True and Progressing=False at its generation and the hub installed its bootstrap
identity, then issues a join token (see flotilla get token) and prints the flotilla join
command. Running init again upgrades the install in place. --dry-run prints the manifests
instead. helm install flotilla-hub charts/flotilla-hub -n open-cluster-management
--create-namespace installs the same manifests (render operator and topology Split are the
chart's defaults; --hub-topology Single is --set topology=Single there).`,
		Example: `  flotilla init --kubeconfig hub.kubeconfig
  flotilla init --hub-topology Single --set image.tag=0.1.0 --output-join-command-file join.sh
  flotilla init --dry-run > hub.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			user, err := vals.values()
			if err != nil {
				return err
			}
			values, err := hubInstallValues(user, topology)
			if err != nil {
				return err
			}
			objs, err := renderHubInstall(values)
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
			if !wait {
				timeout = 0
			}
			if err := installHub(cmd.Context(), cfg, objs, timeout, progress); err != nil {
				return err
			}
			if !wait {
				progress("installed; once the hub is ready, flotilla get token prints the join command")
				return nil
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
	cmd.Flags().StringVar(&topology, "hub-topology", topologySplit,
		"Split: the hub's six components in Deployments of their own, named as OCM's (clusteradm get hub-info lists them); Single: one Deployment flotilla-hub")
	cmd.Flags().BoolVar(&wait, "wait", true, "wait until the hub is ready and print the join command")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the manifests instead of applying them")
	cmd.Flags().StringVar(&joinFile, "output-join-command-file", "", "also write the join command to this file (mode 0600: it holds a token)")
	vals.add(cmd, install.HubChart)
	token.add(cmd)
	return cmd
}

// waitForHub waits until the hub that objs install is ready: the operator reported the
// ClusterManager Applied and not Progressing at its generation, and the hub created its
// bootstrap identity; it reports the operator's and the ClusterManager's progress on the way.
func waitForHub(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, progress func(string)) error {
	c, _, err := hubClientsForConfig(cfg)
	if err != nil {
		return err
	}
	var cmName string
	var operatorKey client.ObjectKey
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterManager":
			cmName = o.GetName()
		case "Deployment":
			operatorKey = client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}
		}
	}
	if cmName == "" || operatorKey.Name == "" {
		return errors.New("waiting for the hub: the render has no ClusterManager or operator Deployment")
	}
	last := ""
	report := func(s string) {
		if s != "" && s != last {
			progress(s)
			last = s
		}
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, operatorKey, d); err == nil && d.Status.AvailableReplicas == 0 {
			report(fmt.Sprintf("hub operator Deployment %s: 0 replicas available", operatorKey))
		}
		ready, why := hubReady(ctx, c, cmName)
		if ready {
			return nil
		}
		report(why)
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the hub: %w; %s (kubectl -n %s logs deploy/%s)", ctx.Err(), why, operatorKey.Namespace, operatorKey.Name)
		case <-tick.C:
		}
	}
}

// hubReady says whether ClusterManager cmName is Applied and rolled out at its generation and
// the hub created the bootstrap identity, or what it waits for.
func hubReady(ctx context.Context, c client.Client, cmName string) (bool, string) {
	cm := &operatorv1.ClusterManager{}
	if err := c.Get(ctx, client.ObjectKey{Name: cmName}, cm); err != nil {
		return false, fmt.Sprintf("reading ClusterManager %s: %v", cmName, err)
	}
	if cm.Status.ObservedGeneration != cm.Generation {
		return false, fmt.Sprintf("the hub operator has not reported ClusterManager %s generation %d yet", cmName, cm.Generation)
	}
	if a := meta.FindStatusCondition(cm.Status.Conditions, operatorv1.ConditionClusterManagerApplied); a == nil || a.Status != metav1.ConditionTrue {
		return false, fmt.Sprintf("ClusterManager %s is not Applied: %s", cmName, conditionText(a))
	}
	if p := meta.FindStatusCondition(cm.Status.Conditions, operatorv1.ConditionProgressing); p == nil || p.Status != metav1.ConditionFalse {
		return false, fmt.Sprintf("ClusterManager %s is Progressing: %s", cmName, conditionText(p))
	}
	sa := &corev1.ServiceAccount{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: rbac.BootstrapNamespace, Name: rbac.BootstrapServiceAccount}, sa); err != nil {
		return false, fmt.Sprintf("the bootstrap ServiceAccount %s/%s is not there yet", rbac.BootstrapNamespace, rbac.BootstrapServiceAccount)
	}
	return true, ""
}

// conditionText is a condition's status, reason and message, for progress and errors.
func conditionText(c *metav1.Condition) string {
	if c == nil {
		return "no condition yet"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}
