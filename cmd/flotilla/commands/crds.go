package commands

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/core/crds"
)

func newCRDsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "crds",
		Short: "Print or install the CustomResourceDefinitions Flotilla serves",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "print",
		Short: "Print every CRD as a multi-document YAML stream",
		RunE: func(cmd *cobra.Command, _ []string) error {
			docs, err := crds.YAML()
			if err != nil {
				return err
			}
			for _, d := range docs {
				fmt.Fprintf(cmd.OutOrStdout(), "---\n%s", d)
			}
			return nil
		},
	})
	var kubeconfig string
	install := &cobra.Command{
		Use:   "install",
		Short: "Install (server-side apply) every CRD into the cluster of --kubeconfig and wait until established",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadRESTConfig(kubeconfig)
			if err != nil {
				return err
			}
			return crds.Install(cmd.Context(), cfg)
		},
	}
	install.Flags().StringVar(&kubeconfig, "kubeconfig", "", "path to the kubeconfig of the target cluster (default: $KUBECONFIG or ~/.kube/config)")
	cmd.AddCommand(install)
	return cmd
}
