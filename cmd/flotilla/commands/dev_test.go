package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/admin"
)

// TestRunDev runs `flotilla dev` with one managed cluster and its simulated Node, the
// registration component and a probe that waits until the Node's capacity reaches the
// cluster's ManagedCluster status (CPU and MEMORY of `flotilla get clusters`).
func TestRunDev(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "dev")
	var out, logs bytes.Buffer
	var sawClusters []string
	var row admin.ClusterRow
	probe := DevComponent{Name: "probe", Run: func(ctx context.Context, fleet *environment.Fleet, _ io.Writer) error {
		for _, cp := range fleet.ControlPlanes() {
			sawClusters = append(sawClusters, cp.Name)
		}
		// The printed kubeconfig must reach the hub.
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "hub", "kubeconfig"))
		if err != nil {
			return err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		nodes, err := kubernetes.NewForConfigOrDie(fleet.Managed[0].Config).CoreV1().Nodes().List(ctx,
			metav1.ListOptions{LabelSelector: environment.SimulatedNodeLabel + "=true"})
		if err != nil {
			return err
		}
		if len(nodes.Items) != 1 {
			return fmt.Errorf("cluster1 has %d simulated Nodes, want 1", len(nodes.Items))
		}
		c, _, err := hubClientsForConfig(cfg)
		if err != nil {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			rows, err := admin.ClusterRows(ctx, c)
			if err != nil || len(rows) == 0 {
				return false, nil
			}
			row = rows[0]
			return row.CPU != "" && row.Memory != "", nil
		})
		if err != nil {
			return fmt.Errorf("waiting for cluster1's capacity in its ManagedCluster status (last row %+v): %w", row, err)
		}
		cancel() // as Ctrl-C would
		<-ctx.Done()
		return nil
	}}
	err := runDev(ctx, &out, &logs, environment.Options{ManagedClusters: 1, Dir: dir, SimulatedNodes: 1},
		[]DevComponent{registrationDevComponent(), probe})
	if err != nil {
		t.Fatalf("runDev: %v\nlogs:\n%s", err, logs.String())
	}
	if strings.Join(sawClusters, ",") != "hub,cluster1" {
		t.Errorf("component saw clusters %v, want hub and cluster1", sawClusters)
	}
	if row.Name != "cluster1" || row.CPU != "4" || row.Memory != "16Gi" {
		t.Errorf("flotilla get clusters row %+v, want cluster1 with the simulated Node's cpu 4 and memory 16Gi", row)
	}
	wantExport := "export KUBECONFIG=" + filepath.Join(dir, "hub", "kubeconfig") + ":" + filepath.Join(dir, "cluster1", "kubeconfig")
	if !strings.Contains(out.String(), wantExport) {
		t.Errorf("output lacks %q:\n%s", wantExport, out.String())
	}
	for _, name := range []string{"hub", "cluster1"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s directory left after exit without --keep (err %v)", name, err)
		}
	}
}

func TestRunComponentsStopsAllWhenOneFails(t *testing.T) {
	stoppedCleanly := false
	waiter := DevComponent{Name: "waiter", Run: func(ctx context.Context, _ *environment.Fleet, _ io.Writer) error {
		<-ctx.Done()
		stoppedCleanly = true
		return nil
	}}
	failing := DevComponent{Name: "broken", Run: func(context.Context, *environment.Fleet, io.Writer) error {
		return errors.New("cannot reach the hub")
	}}
	err := runComponents(t.Context(), nil, io.Discard, []DevComponent{waiter, failing})
	if err == nil || !strings.Contains(err.Error(), "component broken: cannot reach the hub") {
		t.Fatalf("runComponents: got %v, want the broken component's error", err)
	}
	if !stoppedCleanly {
		t.Error("the healthy component was not cancelled")
	}
}

func TestRunComponentsRejectsEarlyReturn(t *testing.T) {
	quitter := DevComponent{Name: "quitter", Run: func(context.Context, *environment.Fleet, io.Writer) error { return nil }}
	err := runComponents(t.Context(), nil, io.Discard, []DevComponent{quitter})
	if err == nil || !strings.Contains(err.Error(), "component quitter: returned before shutdown") {
		t.Fatalf("runComponents: got %v", err)
	}
}

func TestDevFlagValidation(t *testing.T) {
	for _, args := range [][]string{
		{"--managed-clusters", "-1"},
		{"--signing-duration", "0s"},
		{"--simulated-nodes", "-1"},
	} {
		cmd := newDevCommand()
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.ExecuteContext(t.Context())
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("dev %v: got %v, want an error naming %s", args, err, args[0])
		}
	}
}
