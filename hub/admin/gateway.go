package admin

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
)

// GatewayPath is the path, below the hub API server's URL, of cluster's API server through the
// cluster-gateway (the proxy subresource of its ClusterGateway).
func GatewayPath(cluster string) string {
	gv := clustergatewayv1alpha1.GroupVersion
	return "/apis/" + gv.Group + "/" + gv.Version + "/" + clustergatewayv1alpha1.ResourceClusterGateways + "/" + cluster + "/" + clustergatewayv1alpha1.SubresourceProxy
}

// GatewayKubeconfig returns a kubeconfig that reaches cluster's API server through the hub's
// cluster-gateway, as the seeds' walk-through edits one by hand: the current context of hub
// (its credentials, CA, TLS server name and proxy-url) with server <hub
// server>/apis/cluster.core.oam.dev/v1alpha1/clustergateways/<cluster>/proxy, and its
// cluster, user and context named cluster. The managed cluster sees the gateway's
// ServiceAccount; the hub decides by RBAC on clustergateways/proxy who may use it.
func GatewayKubeconfig(hub *clientcmdapi.Config, cluster string) (*clientcmdapi.Config, error) {
	if cluster == "" {
		return nil, fmt.Errorf("no cluster name given")
	}
	if hub == nil || hub.CurrentContext == "" {
		return nil, fmt.Errorf("the hub kubeconfig has no current context")
	}
	ctx, ok := hub.Contexts[hub.CurrentContext]
	if !ok || ctx == nil {
		return nil, fmt.Errorf("the hub kubeconfig's current context %q does not exist", hub.CurrentContext)
	}
	c, ok := hub.Clusters[ctx.Cluster]
	if !ok || c == nil {
		return nil, fmt.Errorf("context %q of the hub kubeconfig names cluster %q, which it does not define", hub.CurrentContext, ctx.Cluster)
	}
	if c.Server == "" {
		return nil, fmt.Errorf("cluster %q of the hub kubeconfig has no server", ctx.Cluster)
	}
	user := clientcmdapi.NewAuthInfo()
	if u, ok := hub.AuthInfos[ctx.AuthInfo]; ok && u != nil {
		user = u.DeepCopy()
	} else if ctx.AuthInfo != "" {
		return nil, fmt.Errorf("context %q of the hub kubeconfig names user %q, which it does not define", hub.CurrentContext, ctx.AuthInfo)
	}
	out := clientcmdapi.NewConfig()
	gc := c.DeepCopy()
	gc.Server = strings.TrimRight(c.Server, "/") + GatewayPath(cluster)
	gc.LocationOfOrigin, user.LocationOfOrigin = "", ""
	out.Clusters[cluster] = gc
	out.AuthInfos[cluster] = user
	nc := clientcmdapi.NewContext()
	nc.Cluster, nc.AuthInfo = cluster, cluster
	out.Contexts[cluster] = nc
	out.CurrentContext = cluster
	return out, nil
}

// CheckGateway reads ClusterGateway cluster through the hub API server: an error says what is
// missing, and for a cluster without one, how to enable it.
func CheckGateway(ctx context.Context, hub *rest.Config, cluster string) error {
	kube, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return err
	}
	gv := clustergatewayv1alpha1.GroupVersion
	path := "/apis/" + gv.Group + "/" + gv.Version + "/" + clustergatewayv1alpha1.ResourceClusterGateways + "/" + cluster
	err = kube.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).Error()
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err) && !strings.Contains(err.Error(), `"`+cluster+`"`):
		// Not the gateway's answer about the cluster: the API itself is missing.
		return fmt.Errorf("the hub serves no ClusterGateways (%v): run the hub with --addons cluster-proxy,managed-serviceaccount,cluster-gateway", err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("cluster %s has no ClusterGateway: enable the add-ons with flotilla addon enable cluster-proxy managed-serviceaccount cluster-gateway --clusters %s", cluster, cluster)
	default:
		return fmt.Errorf("reading ClusterGateway %s: %w", cluster, err)
	}
}
