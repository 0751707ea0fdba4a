package commands

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/hub/dashboard"
)

// dashboardSyncTimeout bounds the first list of everything the dashboard watches.
const dashboardSyncTimeout = 2 * time.Minute

func newDashboardCommand() *cobra.Command {
	var (
		kubeconfig string
		address    string
		namespaces []string
		verbosity  int
	)
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a local web dashboard of the fleet, live, with your own kubeconfig",
		Long: `Serve a web page that shows the hub's fleet as it changes, like kubectl proxy: the
command watches the hub with your kubeconfig and streams a compact view to the browser
(Server-Sent Events). Open the printed URL; stop with Ctrl-C.

Views:
  Fleet       every ManagedCluster: available/joined, reason and since when, labels,
              taints, cluster sets, Kubernetes version, CPU and memory, last lease
              renewal; filter by label selector (k=v,k2!=v) or name, and by cluster set.
  Placements  each Placement: requested and selected clusters, PlacementSatisfied,
              decision groups, decisions, its last Events, and why clusters were or
              were not chosen (the scheduler's filters and scores, computed locally).
  Rollouts    each ManifestWorkReplicaSet and each add-on installed by placements: its
              phase, the placements' decision groups in order and every cluster's state
              (ToApply, Progressing, Succeeded, Failed, TimeOut, Skip) with why; a
              cluster opens its ManifestWork's conditions and status feedback.
  Add-ons     a clusters x add-ons matrix of ManagedClusterAddOn health, configuration
              and version.
  Plugins     WasmPlugins (Ready, reason, digest, Events) and policy ConfigMaps
              (flotilla.dev/policy=true: loaded or rejected, last good version).

RBAC: the page shows what your kubeconfig may list and watch, and says what it may not.
For the full page: list and watch managedclusters, managedclustersets, placements,
placementdecisions, manifestworkreplicasets, manifestworks, managedclusteraddons,
clustermanagementaddons, wasmplugins, manifestworkreplicasetoverrides, leases (the
managed-cluster-lease of each cluster namespace), configmaps labelled flotilla.dev/policy
and events; get manifestworks to open a work's detail. Where a namespaced kind may not
be listed cluster-wide, the namespaces given with --namespace (and the kubeconfig
context's namespace, and the hub's policy namespace) are tried one by one, and only
those allowed are watched.

Security: the server binds 127.0.0.1 by default and answers only requests whose Host is
localhost, 127.0.0.1 or [::1] (no DNS rebinding). The printed URL carries a random
token; the first visit trades it for an HttpOnly, SameSite=Strict cookie, and any
request without it is refused. It serves GET only and changes nothing on the hub: every
read is made with your credentials, which never reach the browser. Binding another
address exposes the page (and your read access) to whoever can reach it and knows the
token: with --address on a non-loopback IP, that IP is accepted as Host too (open the
printed URL; the token still guards), and no host name is.`,
		Example: `  flotilla dashboard
  flotilla dashboard --kubeconfig hub.kubeconfig -n team-a -n team-b --address 127.0.0.1:9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			if kubeconfig != "" {
				rules.ExplicitPath = kubeconfig
			}
			loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
			cfg, err := loader.ClientConfig()
			if err != nil {
				return fmt.Errorf("loading kubeconfig %q: %w", kubeconfig, err)
			}
			if ns, _, err := loader.Namespace(); err == nil && ns != "" {
				namespaces = append([]string{ns}, namespaces...)
			}
			token, err := randomToken()
			if err != nil {
				return err
			}
			logger := newLogger(cmd.ErrOrStderr(), verbosity)
			// Access is checked with one SelfSubjectAccessReview per kind and namespace at start:
			// client-go's default 5 requests a second would hold the first page for seconds.
			if cfg.QPS == 0 {
				cfg.QPS, cfg.Burst = 50, 100
			}
			srv, err := dashboard.New(dashboard.Options{Config: cfg, Namespaces: namespaces, Token: token, HostIPs: boundIPs(address),
				Logger: logger.WithName("dashboard")})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", address)
			if err != nil {
				return fmt.Errorf("listening on %s: %w", address, err)
			}
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			started := make(chan error, 1)
			go func() { started <- srv.Start(ctx) }()
			syncCtx, syncCancel := context.WithTimeout(ctx, dashboardSyncTimeout)
			err = srv.WaitForSync(syncCtx)
			syncCancel()
			if err != nil {
				interrupted := ctx.Err() != nil
				cancel()
				<-started
				_ = ln.Close()
				if interrupted {
					return nil // Ctrl-C while the watches were syncing
				}
				return fmt.Errorf("the dashboard could not read the hub %s: %w", cfg.Host, err)
			}
			// Requests live in ctx, so Ctrl-C ends the event streams too.
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
				BaseContext: func(net.Listener) context.Context { return ctx }}
			served := make(chan error, 1)
			go func() { served <- hs.Serve(ln) }()
			fmt.Fprintf(cmd.OutOrStdout(), "Dashboard: %s\n", dashboardURL(ln.Addr().String(), token))
			select {
			case <-ctx.Done():
			case err = <-started:
				if err != nil {
					err = fmt.Errorf("dashboard watches stopped: %w", err)
				}
			case err = <-served:
				err = fmt.Errorf("serving the dashboard: %w", err)
			}
			cancel()
			shutdownCtx, shutdownCancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer shutdownCancel()
			_ = hs.Shutdown(shutdownCtx)
			if serr := <-started; err == nil && serr != nil && !errors.Is(serr, context.Canceled) {
				err = serr
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&address, "address", "127.0.0.1:8001", "address to serve on; keep it on loopback unless you mean to share the page")
	f.StringSliceVarP(&namespaces, "namespace", "n", nil, "namespace to watch when a kind may not be listed cluster-wide (repeatable)")
	f.IntVar(&verbosity, "v", 0, "log verbosity on standard error")
	return cmd
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the dashboard token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// boundIPs is the IP of a non-loopback, specified bind address (the server accepts it as
// Host besides loopback, so the printed URL opens); none otherwise.
func boundIPs(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() || ip.IsLoopback() {
		return nil
	}
	return []string{ip.String()}
}

// dashboardURL is the page's URL on addr with the token; an unspecified bind address is
// shown as 127.0.0.1, the only Host the server answers.
func dashboardURL(addr, token string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() || ip.IsLoopback() && ip.To4() != nil {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/", RawQuery: url.Values{"token": {token}}.Encode()}
	return u.String()
}
