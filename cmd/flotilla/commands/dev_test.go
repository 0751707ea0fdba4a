package commands

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/core/environment"
)

func TestRunDev(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "dev")
	var out, logs bytes.Buffer
	var sawClusters []string
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
		cancel() // as Ctrl-C would
		<-ctx.Done()
		return nil
	}}
	err := runDev(ctx, &out, &logs, environment.Options{ManagedClusters: 1, Dir: dir}, []DevComponent{probe})
	if err != nil {
		t.Fatalf("runDev: %v\nlogs:\n%s", err, logs.String())
	}
	if strings.Join(sawClusters, ",") != "hub,cluster1" {
		t.Errorf("component saw clusters %v, want hub and cluster1", sawClusters)
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
