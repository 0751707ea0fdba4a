package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/hub/dashboard"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// Hub mode's dashboard (Options.Dashboard): the aggregated API dashboard.flotilla.dev/v1alpha1
// on the webhook server, with one object, Dashboard "fleet", whose proxy subresource serves
// the page and its stream. The page is a subresource, as a Service's proxy is, because the hub
// API server authorizes an aggregated request by its first three path segments
// (resource/name/subresource) and treats only proxy (and watch) requests as long-running:
// under ui/ each file and API path would be a subresource of its own to grant, and the
// page's event stream would be cut at the API server's request timeout (60 s).
const (
	DashboardGroup       = "dashboard.flotilla.dev"
	DashboardVersion     = "v1alpha1"
	DashboardResource    = "dashboards"
	DashboardName        = "fleet"
	DashboardSubresource = "proxy"
	// DashboardPath is the page, under the hub API server (kubectl proxy:
	// http://127.0.0.1:8001/apis/dashboard.flotilla.dev/v1alpha1/dashboards/fleet/proxy/).
	DashboardPath = "/apis/" + DashboardGroup + "/" + DashboardVersion + "/" + DashboardResource + "/" + DashboardName + "/" + DashboardSubresource + "/"
	// DashboardViewerClusterRole (the chart's, bound to nobody) grants get on
	// dashboards/proxy: reaching the page. What it shows is filtered by the viewer's own RBAC.
	DashboardViewerClusterRole = "open-cluster-management:flotilla-dashboard-viewer"
)

// dashboardServer and dashboardRBAC name the dashboard's parts in Hub.parts.
type (
	dashboardServer struct{ ComponentFunc }
	dashboardRBAC   struct{ Component }
)

// setupDashboard serves the dashboard on srv: its watches run with the hub's identity on every
// replica (each serves its own viewers), and each viewer sees what their SubjectAccessReviews
// allow (dashboard.SARAuthorizer, cached until RBAC changes).
func (h *Hub) setupDashboard(kube kubernetes.Interface, srv *webhook.Server) ([]Component, error) {
	authz, rbacWatch, err := dashboard.NewSARAuthorizer(kube.AuthorizationV1().SubjectAccessReviews())
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	d, err := dashboard.New(dashboard.Options{Config: h.opts.Config, Authorizer: authz, Logger: h.opts.Logger.WithName("dashboard")})
	if err != nil {
		return nil, fmt.Errorf("hub: dashboard: %w", err)
	}
	if err := srv.RegisterAPIService(webhook.APIService{Group: DashboardGroup, Version: DashboardVersion, Handler: dashboardAPI(d.Handler())}); err != nil {
		return nil, fmt.Errorf("hub: dashboard API: %w", err)
	}
	log := h.opts.Logger.WithName("dashboard")
	// A dashboard that cannot run is logged, not fatal: the process also serves the add-on
	// kinds' conversion and the add-ons' APIs, which must not stop with it.
	run := runnableFunc(func(ctx context.Context) error {
		if err := d.Start(ctx); err != nil {
			log.Error(err, "The dashboard stopped; the hub runs on without it")
		}
		return nil
	})
	return []Component{
		&dashboardServer{ComponentFunc(func(mgr ctrl.Manager) error { return mgr.Add(everyReplica{run}) })},
		&dashboardRBAC{rbacWatch},
	}, nil
}

// dashboardAPI answers the API's paths: its APIResourceList, and the page (Handler of
// hub/dashboard, which takes paths relative to where it is mounted) under DashboardPath.
func dashboardAPI(page http.Handler) http.Handler {
	version := "/apis/" + DashboardGroup + "/" + DashboardVersion
	proxy := strings.TrimSuffix(DashboardPath, "/")
	discovery, _ := json.Marshal(&metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{APIVersion: "v1", Kind: "APIResourceList"},
		GroupVersion: DashboardGroup + "/" + DashboardVersion,
		APIResources: []metav1.APIResource{
			// The object itself is not served: only its page.
			{Name: DashboardResource, SingularName: "dashboard", Kind: "Dashboard", Verbs: metav1.Verbs{}},
			{Name: DashboardResource + "/" + DashboardSubresource, Kind: "Dashboard", Verbs: metav1.Verbs{"get"}},
		},
	})
	strip := http.StripPrefix(proxy, page)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == version || p == version+"/":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				webhook.WriteStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "only GET is served at "+version)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(discovery)
		case p == proxy:
			// The page's relative URLs need the slash. The API server refuses an aggregated
			// API's redirects (502), so the browser is sent on by the page itself, relative to
			// wherever the API is proxied (kubectl proxy --api-prefix).
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = io.WriteString(w, toPage)
		case strings.HasPrefix(p, proxy+"/"):
			strip.ServeHTTP(w, r)
		default:
			webhook.WriteStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
				fmt.Sprintf("%s is not served: the dashboard is at %s", p, DashboardPath))
		}
	})
}

// toPage sends a browser from DashboardPath without its slash to the page.
const toPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Flotilla dashboard</title>` +
	`<meta http-equiv="refresh" content="0; url=` + DashboardSubresource + `/"></head>` +
	`<body><p><a href="` + DashboardSubresource + `/">Open the dashboard</a></p></body></html>`
