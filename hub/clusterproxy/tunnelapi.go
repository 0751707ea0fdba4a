package clusterproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/flotilla-dev/flotilla/core/clusterproxy"
	"github.com/flotilla-dev/flotilla/core/tunnel"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// APIService is the tunnel API (proxy.flotilla.dev/v1alpha1), to register with
// webhook.Server.RegisterAPIService. Agents open their streams with
//
//	POST /apis/proxy.flotilla.dev/v1alpha1/namespaces/<cluster>/tunnels/cluster-proxy/proxy
//	Connection: Upgrade
//	Upgrade: konnectivity.proxy.flotilla.dev/v1
//
// through the hub API server, which authorizes create on tunnels/proxy by RBAC; the handler
// also requires the caller to be in the cluster's agent group (clusterproxy.AgentGroup), and
// hands the upgraded connection to the Server as that cluster's.
func (s *Server) APIService() webhook.APIService {
	return webhook.APIService{Group: clusterproxy.TunnelAPIGroup, Version: clusterproxy.TunnelAPIVersion, Handler: http.HandlerFunc(s.serveTunnelAPI)}
}

const tunnelAPIPrefix = "/apis/" + clusterproxy.TunnelAPIGroup + "/" + clusterproxy.TunnelAPIVersion

func (s *Server) serveTunnelAPI(w http.ResponseWriter, r *http.Request) {
	rest, _ := strings.CutPrefix(r.URL.Path, tunnelAPIPrefix)
	if rest == "" || rest == "/" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			webhook.WriteStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "only GET is served at "+tunnelAPIPrefix)
			return
		}
		writeJSON(w, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: clusterproxy.TunnelAPIGroup + "/" + clusterproxy.TunnelAPIVersion,
			APIResources: []metav1.APIResource{
				{Name: clusterproxy.TunnelResource + "/proxy", Namespaced: true, Kind: "Tunnel", Verbs: []string{"create", "get"}},
			},
		})
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) != 5 || parts[0] != "namespaces" || parts[2] != clusterproxy.TunnelResource || parts[3] != clusterproxy.TunnelName || parts[4] != "proxy" {
		webhook.WriteStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("%s: not found (the tunnel API serves namespaces/<cluster>/tunnels/%s/proxy)", r.URL.Path, clusterproxy.TunnelName))
		return
	}
	cluster := parts[1]
	if errs := validation.IsDNS1123Label(cluster); len(errs) > 0 {
		webhook.WriteStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("namespace %q is not a cluster name: %s", cluster, strings.Join(errs, "; ")))
		return
	}
	u, ok := request.UserFrom(r.Context())
	if !ok {
		webhook.WriteStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
		return
	}
	if group := clusterproxy.AgentGroup(cluster); !slices.Contains(u.GetGroups(), group) {
		s.log.Info("Refused a tunnel for a user outside the cluster's agent group", "cluster", cluster, "user", u.GetName())
		webhook.WriteStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf("user %q may not open the cluster-proxy tunnel of cluster %s: not in group %s", u.GetName(), cluster, group))
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), tunnel.UpgradeProtocol) {
		webhook.WriteStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the tunnel needs Connection: Upgrade and Upgrade: "+tunnel.UpgradeProtocol)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		webhook.WriteStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "upgrading the tunnel: "+err.Error())
		return
	}
	if _, err := rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + tunnel.UpgradeProtocol + "\r\n\r\n"); err != nil || rw.Flush() != nil {
		_ = conn.Close()
		return
	}
	// The connection outlives the request: the Server's gRPC server owns it from here.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	if err := s.listener.Offer(ctx, conn, rw.Reader, tunnel.AuthInfo{Cluster: cluster, User: u.GetName()}); err != nil {
		s.log.Info("Could not hand a tunnel to the server", "cluster", cluster, "error", err.Error())
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
