package clustergateway

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
)

// authorize asks whether u may use the proxy subresource of cluster with r's verb.
func (g *Gateway) authorize(r *http.Request, u user.Info, cluster string) error {
	verb := "get"
	if info, err := requestInfo.NewRequestInfo(r); err == nil && info.Verb != "" {
		verb = info.Verb
	}
	attrs := policy.Attributes{Verb: verb, Group: clustergatewayv1alpha1.GroupVersion.Group,
		Resource: clustergatewayv1alpha1.ResourceClusterGateways, Subresource: clustergatewayv1alpha1.SubresourceProxy, Name: cluster}
	ok, err := policy.Review(r.Context(), g.opts.Reviews, userInfo(u), attrs)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorizing %s on clustergateways/proxy %s: %w", u.GetName(), cluster, err))
	}
	if !ok {
		return apierrors.NewForbidden(gatewaysResource, cluster, fmt.Errorf("User %q cannot %s resource %q in API group %q at the cluster scope",
			u.GetName(), verb, clustergatewayv1alpha1.ResourceClusterGateways+"/"+clustergatewayv1alpha1.SubresourceProxy, clustergatewayv1alpha1.GroupVersion.Group))
	}
	return nil
}

func userInfo(u user.Info) policy.UserInfo {
	return policy.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

// judge runs the gateway policies; a denial or an evaluation error is 403 naming the policy.
func (g *Gateway) judge(ctx context.Context, u user.Info, mc *clusterv1.ManagedCluster, info *apirequest.RequestInfo, inner string, r *http.Request, upgrade bool) error {
	sets, err := g.clusterSets(ctx, mc)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	in := &policy.GatewayInput{
		User:    userInfo(u),
		Cluster: policy.GatewayCluster{Name: mc.Name, Labels: mc.Labels, ClusterSets: sets},
		Request: policy.GatewayRequest{
			Method: r.Method, Verb: info.Verb, Path: inner, Query: r.URL.Query(), Upgrade: upgrade,
			IsResourceRequest: info.IsResourceRequest, APIGroup: info.APIGroup, APIVersion: info.APIVersion,
			Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name,
		},
	}
	d, err := g.opts.Policies.EvaluateGateway(ctx, in)
	if err != nil {
		return statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "cluster %s: gateway policies: %v (denied: policies fail closed)", mc.Name, err)
	}
	if d.Allowed() {
		return nil
	}
	var msgs []string
	for _, dn := range d.Denials {
		g.metrics.denials.WithLabelValues(dn.Policy).Inc()
		msgs = append(msgs, fmt.Sprintf("policy %s: %s", dn.Policy, dn.Message))
	}
	for _, e := range d.Errors {
		g.metrics.denials.WithLabelValues(e.Policy).Inc()
		msgs = append(msgs, e.Error()+" (denied: policies fail closed)")
	}
	return statusError(http.StatusForbidden, metav1.StatusReasonForbidden, "%s", strings.Join(msgs, "; "))
}

// clusterSets are the ManagedClusterSets mc belongs to, for input.cluster.clusterSets.
func (g *Gateway) clusterSets(ctx context.Context, mc *clusterv1.ManagedCluster) ([]string, error) {
	list := &clusterv1beta2.ManagedClusterSetList{}
	if err := g.opts.Reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing ManagedClusterSets (for the gateway policies' input.cluster.clusterSets): %w", err)
	}
	var out []string
	for i := range list.Items {
		sel, err := clusterset.Selector(&list.Items[i])
		if err != nil {
			continue // the set's status says why; it selects nothing
		}
		if sel.Matches(labels.Set(mc.Labels)) {
			out = append(out, list.Items[i].Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
