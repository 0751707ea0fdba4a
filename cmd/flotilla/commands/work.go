package commands

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/hub/admin"
)

// newCreateCommand is `flotilla create`, the parent of the commands that create hub resources.
func newCreateCommand() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create hub resources (ManifestWorks, ManagedClusterSets)",
		Example: `  flotilla create work hello-work-demo -f hello.yaml --clusters cluster1,cluster2
  flotilla create work hello-work-demo -f hello.yaml --placement default/placement1
  flotilla get works hello-work-demo --cluster cluster1
  flotilla create clusterset clusterset1`,
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	cmd.AddCommand(newCreateWorkCommand(&kubeconfig), newCreateClusterSetCommand(&kubeconfig))
	return cmd
}

func newCreateWorkCommand(kubeconfig *string) *cobra.Command {
	var (
		file      string
		clusters  []string
		placement string
		replace   bool
	)
	cmd := &cobra.Command{
		Use:     "work NAME -f FILE_OR_DIR (--clusters c1,c2 | --placement NAMESPACE/NAME)",
		Aliases: []string{"manifestwork"},
		Short:   "Deploy Kubernetes manifests to managed clusters as a ManifestWork",
		Long: `Wrap the Kubernetes manifests of a file or directory into a ManifestWork named NAME and
create it in the namespace of each cluster on the hub; each cluster's work agent applies
the manifests on its cluster and reports their status back (flotilla get works).

-f takes a YAML or JSON file (several YAML documents separated by "---" lines, or a
stream of JSON objects; List kinds are expanded into their items), a directory (every
*.yaml, *.yml and *.json file in it, in name order, not recursive) or - for standard
input. The manifests keep that order in spec.workload.manifests. Every manifest needs
apiVersion, kind and metadata.name; a ManifestWork is refused as a manifest (apply it
with kubectl instead). Errors name the file and the document, counted from 1.

The clusters are --clusters, or with --placement NAMESPACE/NAME every cluster the
Placement currently selects: the clusters its PlacementDecisions list (flotilla get
placements NAME -n NAMESPACE), in decision order. The decisions are read once: a cluster
the placement selects later gets no ManifestWork, and one it drops keeps its ManifestWork,
until create work runs again with --replace (or --overwrite, as clusteradm says), which also
deletes the work from clusters the placement no longer selects (works it placed carry the
label work.flotilla.dev/placement=<namespace>.<name>). A placement with no decisions (the placement
controller has not decided it, or no cluster fits) is an error saying why, and nothing is
created. --clusters and --placement are mutually exclusive.

Every cluster must have an accepted ManagedCluster (flotilla get clusters), and a
ManifestWork named NAME must not exist in any of them, or nothing is created. With
--replace an existing ManifestWork keeps its other fields (manifestConfigs, deleteOption,
executor, labels) and only its manifests are replaced.

Status feedback, update strategies and delete options are fields of the ManifestWork:
set them with kubectl (see the README, "Deploying work to clusters").`,
		Example: `  # Deploy a Deployment to two clusters
  flotilla create work hello-work-demo -f hello.yaml --clusters cluster1,cluster2

  # To every cluster the Placement default/placement1 selects
  flotilla create work hello-work-demo -f hello.yaml --placement default/placement1

  # Every manifest of a directory, replacing the manifests of an existing work
  flotilla create work my-app -f ./manifests/ --clusters cluster1 --replace

  # From standard input
  kubectl create configmap app-config -n default --from-literal=mode=demo --dry-run=client -o yaml |
    flotilla create work app-config -f - --clusters cluster1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return fmt.Errorf("-f/--filename is required")
			}
			placementNS, placementName := "", ""
			switch {
			case len(clusters) > 0 && placement != "":
				return fmt.Errorf("--clusters and --placement are mutually exclusive: give the clusters or a placement that selects them")
			case placement != "":
				ns, n, err := admin.ParsePlacementRef(placement)
				if err != nil {
					return fmt.Errorf("--placement: %w", err)
				}
				placementNS, placementName = ns, n
			case len(clusters) == 0:
				return fmt.Errorf("--clusters or --placement is required")
			}
			manifests, err := admin.ReadManifests(file, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			if placementName != "" {
				clusters, err = admin.PlacementClusters(cmd.Context(), c, placementNS, placementName)
				if err != nil {
					return fmt.Errorf("%w; no ManifestWork was written", err)
				}
			}
			results, err := admin.CreateWork(cmd.Context(), c, args[0], clusters, manifests, replace)
			if err != nil && placementName != "" {
				err = fmt.Errorf("placement %s/%s selects %s: %w", placementNS, placementName, strings.Join(clusters, ", "), err)
			}
			for _, r := range results {
				verb := "created"
				if r.Updated {
					verb = "updated"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "manifestwork %s %s in %s\n", args[0], verb, r.Cluster)
			}
			if err != nil || placementName == "" {
				return err
			}
			// Works placed by a placement remember it, so a later --replace takes the work away
			// from clusters the placement no longer selects (clusteradm's --overwrite).
			if err := admin.LabelPlacementWork(cmd.Context(), c, args[0], placementNS, placementName, clusters); err != nil {
				return err
			}
			if !replace {
				return nil
			}
			pruned, err := admin.PruneWork(cmd.Context(), c, args[0], placementNS, placementName, clusters)
			for _, cl := range pruned {
				fmt.Fprintf(cmd.OutOrStdout(), "manifestwork %s deleted from %s (no longer selected)\n", args[0], cl)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "filename", "f", "", "file or directory of manifests (YAML or JSON), or - for standard input")
	f.StringSliceVar(&clusters, "clusters", nil, "comma-separated names of the managed clusters to deploy to")
	f.StringVar(&placement, "placement", "", "NAMESPACE/NAME of a Placement: deploy to every cluster its PlacementDecisions currently list")
	f.BoolVar(&replace, "replace", false, "replace the manifests of an existing ManifestWork of that name instead of failing; with --placement, also delete it from the clusters the placement no longer selects")
	f.BoolVar(&replace, "overwrite", false, "same as --replace (clusteradm's name)")
	return cmd
}

// newGetWorksCommand is `flotilla get works`; kubeconfig is the flag of `flotilla get`.
func newGetWorksCommand(kubeconfig *string) *cobra.Command {
	var cluster string
	cmd := &cobra.Command{
		Use:     "works [NAME]",
		Aliases: []string{"work", "manifestworks", "manifestwork"},
		Short:   "List ManifestWorks with Applied/Available, or show one with its manifests' conditions and feedback",
		Long: `Without NAME, list the ManifestWorks of --cluster (of every cluster, with a CLUSTER
column, when --cluster is omitted): the number of manifests, the status of the work's
Applied and Available conditions as the cluster's work agent reported them ("-" before it
reported) and the age.

With NAME (and --cluster), show that ManifestWork: its conditions (type, status, reason,
message), then each manifest in order (ordinal, kind, namespace/name) with its conditions
and the status feedback values its feedback rules collected, as name=value.

Feedback values are collected for the manifests that spec.manifestConfigs gives feedback
rules: JSONPaths rules read fields natively; WellKnownStatus rules are served by the
FeedbackExtractor plugins the klusterlet loads (feedback-wellknown covers Deployment, Job,
Pod, DaemonSet and StatefulSet). A kind no plugin serves makes StatusFeedbackSynced False on
the manifest, saying so.`,
		Example: `  flotilla get works
  flotilla get works --cluster cluster1
  flotilla get works hello-work-demo --cluster cluster1

  # Report the Deployment default/hello's .status.replicas as feedback value "replicas"
  kubectl patch manifestwork hello-work-demo -n cluster1 --type merge -p '{"spec":{"manifestConfigs":[
    {"resourceIdentifier":{"group":"apps","resource":"deployments","namespace":"default","name":"hello"},
     "feedbackRules":[{"type":"JSONPaths","jsonPaths":[{"name":"replicas","path":".status.replicas"}]}]}]}}'
  flotilla get works hello-work-demo --cluster cluster1    # replicas=1 under the manifest's Feedback`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && cluster == "" {
				return fmt.Errorf("--cluster is required with a work name")
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				d, err := admin.GetWorkDetail(cmd.Context(), c, cluster, args[0])
				if err != nil {
					return err
				}
				return admin.WriteWorkDetail(cmd.OutOrStdout(), d, time.Now())
			}
			rows, err := admin.WorkRows(cmd.Context(), c, cluster)
			if err != nil {
				return err
			}
			return admin.WriteWorks(cmd.OutOrStdout(), rows, cluster == "", time.Now())
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "managed cluster (its namespace on the hub); required with NAME; all clusters when omitted")
	return cmd
}
