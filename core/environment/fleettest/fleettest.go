// Package fleettest starts environment fleets for tests and stops them when the test,
// container or suite that started them ends, including when it fails or panics. (When
// the test binary itself is killed the control planes die with it, see
// core/environment.)
package fleettest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/onsi/ginkgo/v2"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/environment"
)

// KeepEnv, when set to a non-empty value, keeps the control planes' directories (logs,
// etcd data, kubeconfigs) after the fleet stops, and prints where they are.
const KeepEnv = "FLOTILLA_KEEP_CLUSTERS"

// Start starts a fleet from a Ginkgo setup node (BeforeSuite, SynchronizedBeforeSuite,
// BeforeAll, BeforeEach) and registers its Stop with DeferCleanup, so the fleet lives
// exactly as long as that node's scope. Progress goes to GinkgoWriter unless opts.Log is
// set. A failure to start fails the node.
func Start(ctx context.Context, opts environment.Options) *environment.Fleet {
	ginkgo.GinkgoHelper()
	if opts.Log == nil {
		opts.Log = ginkgo.GinkgoWriter
	}
	opts.Keep = opts.Keep || os.Getenv(KeepEnv) != ""
	fleet, err := environment.Start(ctx, opts)
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("starting fleet: %v", err))
	}
	ginkgo.DeferCleanup(func() error {
		if opts.Keep {
			fmt.Fprintf(ginkgo.GinkgoWriter, "keeping control-plane directories: %s\n", dirs(fleet))
		}
		return fleet.Stop()
	})
	return fleet
}

// Admin is an admin client of fleet's hub on the project's scheme (core/apis/scheme), and
// that scheme, for managers the suite builds. A failure fails the node.
func Admin(fleet *environment.Fleet) (client.Client, *runtime.Scheme) {
	ginkgo.GinkgoHelper()
	scheme := runtime.NewScheme()
	if err := apischeme.AddToScheme(scheme); err != nil {
		ginkgo.Fail(fmt.Sprintf("building the scheme: %v", err))
	}
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("admin client of %s: %v", fleet.Hub.Name, err))
	}
	return c, scheme
}

// Logger is a logger to GinkgoWriter, made controller-runtime's too (its managers and
// controllers log there unless given another).
func Logger() logr.Logger {
	logger := funcr.New(func(prefix, args string) { ginkgo.GinkgoWriter.Println(prefix, args) }, funcr.Options{})
	ctrl.SetLogger(logger)
	return logger
}

// StartT starts a fleet for a plain Go test and stops it in t.Cleanup.
func StartT(t testing.TB, opts environment.Options) *environment.Fleet {
	t.Helper()
	if opts.Log == nil {
		opts.Log = logWriter{t}
	}
	opts.Keep = opts.Keep || os.Getenv(KeepEnv) != ""
	fleet, err := environment.Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting fleet: %v", err)
	}
	t.Cleanup(func() {
		if opts.Keep {
			t.Logf("keeping control-plane directories: %s", dirs(fleet))
		}
		if err := fleet.Stop(); err != nil {
			t.Errorf("stopping fleet: %v", err)
		}
	})
	return fleet
}

func dirs(f *environment.Fleet) string {
	var out []string
	for _, cp := range f.ControlPlanes() {
		out = append(out, cp.Dir)
	}
	return strings.Join(out, " ")
}

// logWriter forwards progress lines to t.Log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
