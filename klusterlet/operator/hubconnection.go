package operator

import (
	"cmp"
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// DefaultStatusResync is how often the operator checks a Klusterlet's hub connection again
// without a change seen (OCM's operator checks it every 30 s).
const DefaultStatusResync = 30 * time.Second

// HubConnection is HubConnectionDegraded, checked as OCM's operator does: the hub kubeconfig
// Secret ns/name (read with c), then a SelfSubjectAccessReview with its identity (through
// dial, when set) for what only an accepted cluster may do, updating its ManagedCluster's
// status. bootstrap, when set, describes the bootstrap kubeconfig ("" once the agent needs it
// no more); a degraded condition puts its reason and message first.
func HubConnection(ctx context.Context, c client.Reader, ns, name, clusterName string, dial registration.DialFunc,
	bootstrap func(context.Context) (reason, msg string)) metav1.Condition {
	degraded := func(reason, msg string) metav1.Condition {
		if bootstrap != nil {
			if breason, bmsg := bootstrap(ctx); breason != "" {
				reason, msg = breason+","+reason, bmsg+"\n"+msg
			}
		}
		return metav1.Condition{Type: operatorv1.ConditionHubConnectionDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
	}
	sec := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec); err != nil {
		return degraded(operatorv1.ReasonHubKubeConfigSecretMissing, fmt.Sprintf("Failed to get hub kubeconfig secret %s/%s: %v", ns, name, err))
	}
	kubeconfig := sec.Data[registration.KubeconfigKey]
	if len(kubeconfig) == 0 {
		return degraded(operatorv1.ReasonHubKubeConfigMissing, fmt.Sprintf("Hub kubeconfig secret %s/%s has no kubeconfig yet: the agent's CSR "+
			"must be approved by the hub admin (flotilla accept --clusters %s)", ns, name, clusterName))
	}
	cluster := cmp.Or(string(sec.Data[registration.ClusterNameKey]), clusterName)
	if cluster == "" {
		return degraded(operatorv1.ReasonClusterNameMissing, fmt.Sprintf("Hub kubeconfig secret %s/%s names no cluster", ns, name))
	}
	cfg, err := registration.RESTConfigFromKubeconfig(kubeconfig, fmt.Sprintf("secret %s/%s", ns, name))
	if err != nil {
		return degraded(operatorv1.ReasonHubKubeConfigError, err.Error())
	}
	cfg.Dial, cfg.Timeout, cfg.QPS, cfg.Burst = dial, 10*time.Second, 2, 5
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return degraded(operatorv1.ReasonHubKubeConfigError, err.Error())
	}
	attrs := &authorizationv1.ResourceAttributes{Group: "cluster.open-cluster-management.io", Resource: "managedclusters",
		Subresource: "status", Verb: "update", Name: cluster}
	review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
	switch {
	case err != nil:
		return degraded(operatorv1.ReasonHubKubeConfigError, fmt.Sprintf("Failed to create a SelfSubjectAccessReview with hub kubeconfig secret %s/%s to apiserver %s: %v",
			ns, name, cfg.Host, err))
	case !review.Status.Allowed:
		return degraded(operatorv1.ReasonHubKubeConfigUnauthorized, fmt.Sprintf("Operation %s %s/%s %s is not allowed with hub kubeconfig secret %s/%s to apiserver %s: "+
			"the hub has not accepted the cluster", attrs.Verb, attrs.Resource, attrs.Subresource, cluster, ns, name, cfg.Host))
	}
	return metav1.Condition{Type: operatorv1.ConditionHubConnectionDegraded, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonHubConnectionFunctional,
		Message: fmt.Sprintf("Hub kubeconfig secret %s/%s to apiserver %s is working", ns, name, cfg.Host)}
}
