package operator

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/core/satoken"
)

// Names of the klusterlet operator (`flotilla operator klusterlet`) and of what it applies.
const (
	// OperatorNamespace holds the operator and its Lease.
	OperatorNamespace = "open-cluster-management"
	// OperatorLease is the operator's leader election Lease in OperatorNamespace.
	OperatorLease = "klusterlet-operator-lock"
	// ManagedByLabel=ManagedByValue and operatorv1.KlusterletNamespaceLabel=<Klusterlet name>
	// mark every object the operator applied for a Klusterlet, on both clusters.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "flotilla-operator"
	// AppliedModeAnnotation records the deploy mode the Klusterlet was first applied in:
	// ValuesFor refuses a change of it.
	AppliedModeAnnotation = "operator.flotilla.dev/applied-mode"
	// EvictionTimestampAnnotation (OCM's) on a Hosted Klusterlet being deleted: once this
	// RFC 3339 time has passed, cleanup gives up on a managed cluster it cannot reach.
	EvictionTimestampAnnotation = "operator.open-cluster-management.io/managed-resources-eviction-timestamp"

	// The operator's server-side apply field managers, one per writer: the deploy reconciler
	// (objects, finalizers, the mode annotation, Applied), the prepare step (ReadyToApply) and
	// the status reconciler (every other status field).
	OperatorDeployFieldManager  = apply.FieldManagerPrefix + "klusterlet-operator-deploy"
	OperatorPrepareFieldManager = apply.FieldManagerPrefix + "klusterlet-operator-prepare"
	OperatorStatusFieldManager  = apply.FieldManagerPrefix + "klusterlet-operator-status"

	// ExternalKubeconfigKey is the key of the kubeconfig in the external-managed-kubeconfig
	// Secrets.
	ExternalKubeconfigKey = "kubeconfig"
	// tokenExpiryAnnotation on a token Secret says when its token expires (RFC 3339).
	tokenExpiryAnnotation = "operator.flotilla.dev/token-expiration"
)

// tokenLifetime is what the operator asks of the agents' managed-cluster tokens (OCM's
// sa_syncer asks a year); the API server may cap it. They are renewed at 80 % of the life
// the server granted.
const tokenLifetime = 365 * 24 * time.Hour

// reconcileTimeout bounds one reconcile of a Klusterlet: render, both applies, the tokens.
const reconcileTimeout = 2 * time.Minute

// maxKubeconfigBytes caps the external managed kubeconfig read (a Secret holds 1 MiB anyway).
const maxKubeconfigBytes = 1 << 20

// operatorLabels are the labels of what the operator applies for Klusterlet name.
func operatorLabels(name string) map[string]string {
	return map[string]string{ManagedByLabel: ManagedByValue, operatorv1.KlusterletNamespaceLabel: name}
}

// clusters are the clients of one Klusterlet's reconcile: the management cluster (where the
// operator runs) and the managed one (the same in the non-Hosted modes).
type clusters struct {
	management, managed *rest.Config
	// secretCreated is when the external managed kubeconfig Secret was created (Hosted).
	secretCreated metav1.Time
}

// prepare builds the managed cluster's config of a Hosted Klusterlet from Secret
// external-managed-kubeconfig (key kubeconfig) in its agent namespace.
func prepare(ctx context.Context, kube kubernetes.Interface, management *rest.Config, agentNS string) (clusters, error) {
	c := clusters{management: management}
	s, err := kube.CoreV1().Secrets(agentNS).Get(ctx, operatorv1.ExternalManagedKubeConfigSecret, metav1.GetOptions{})
	if err != nil {
		return c, err
	}
	data := s.Data[ExternalKubeconfigKey]
	switch {
	case len(data) == 0:
		return c, fmt.Errorf("secret %s/%s has no key %s", agentNS, s.Name, ExternalKubeconfigKey)
	case len(data) > maxKubeconfigBytes:
		return c, fmt.Errorf("secret %s/%s: %s has %d bytes, more than %d", agentNS, s.Name, ExternalKubeconfigKey, len(data), maxKubeconfigBytes)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return c, err
	}
	if cfg.Host == "" {
		return c, fmt.Errorf("secret %s/%s: the kubeconfig names no server", agentNS, s.Name)
	}
	cfg.Timeout = 30 * time.Second
	c.managed, c.secretCreated = cfg, s.CreationTimestamp
	return c, nil
}

// readyToApply is the ReadyToApply condition after prepare, in OCM's words.
func readyToApply(c clusters, err error) metav1.Condition {
	if err != nil {
		return metav1.Condition{Type: operatorv1.ConditionReadyToApply, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonKlusterletPrepareFailed,
			Message: "Failed to build managed cluster clients: " + err.Error()}
	}
	return metav1.Condition{Type: operatorv1.ConditionReadyToApply, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonKlusterletPrepared,
		Message: "Klusterlet is ready to apply, the external managed kubeconfig secret was created at: " + c.secretCreated.UTC().Format(time.RFC3339)}
}

// rendered is what the operator applies for a Klusterlet, split by cluster.
type rendered struct {
	values              Values
	management, managed []*unstructured.Unstructured
	// ignored are the values ConfigMap's values the Klusterlet's replace (agentValues).
	ignored []string
}

// renderKlusterlet renders the components of k in mode appliedMode's terms, with configMap
// (the values ConfigMap's, readValues) under the Klusterlet's; values.Blocking says when
// nothing may be applied.
func renderKlusterlet(k *operatorv1.Klusterlet, appliedMode operatorv1.InstallMode, configMap map[string]any) (rendered, error) {
	v := ValuesFor(k, appliedMode)
	r := rendered{values: v}
	if len(v.Blocking) > 0 {
		return r, nil
	}
	values, ignored, err := agentValues(configMap, v)
	if err != nil {
		return r, fmt.Errorf("Klusterlet %s: %w", k.Name, err)
	}
	r.ignored = ignored
	objs, err := install.Render(install.KlusterletChart, k.Name, v.AgentNamespace, values)
	if err != nil {
		if len(configMap) > 0 {
			return r, fmt.Errorf("rendering the components of Klusterlet %s with the values of ConfigMap %s/%s (key %s): %w", k.Name, v.AgentNamespace, ValuesConfigMap, ValuesKey, err)
		}
		return r, fmt.Errorf("rendering the components of Klusterlet %s: %w", k.Name, err)
	}
	for _, o := range objs {
		if hosted(v.Mode) && Target(o, v.AgentNamespace) == operatorv1.TargetManaged {
			r.managed = append(r.managed, o)
		} else {
			r.management = append(r.management, o)
		}
	}
	return r, nil
}

// tokenSecrets maps the agents' ServiceAccounts on the managed cluster to the Secrets on the
// management cluster holding their kubeconfigs (Hosted modes).
func tokenSecrets(k *operatorv1.Klusterlet, mode operatorv1.InstallMode) map[string]string {
	if mode == operatorv1.InstallModeSingletonHosted {
		return map[string]string{install.KlusterletAgentServiceAccount(k.Name): operatorv1.ExternalManagedKubeConfigAgentSecret}
	}
	return map[string]string{
		k.Name + "-registration-sa":                  operatorv1.ExternalManagedKubeConfigRegistrationSecret,
		install.KlusterletWorkServiceAccount(k.Name): operatorv1.ExternalManagedKubeConfigWorkSecret,
	}
}

// syncTokens writes, for each agent ServiceAccount of the managed cluster, a kubeconfig of
// the managed cluster with a TokenRequest token of it into its Secret in the agent namespace,
// unless the token there is younger than 80 % of its life. It returns when the next one is
// due.
func syncTokens(ctx context.Context, local kubernetes.Interface, c clusters, k *operatorv1.Klusterlet, r rendered, owner metav1.OwnerReference, now time.Time) (time.Duration, error) {
	managedKube, err := kubernetes.NewForConfig(c.managed)
	if err != nil {
		return 0, err
	}
	ns := r.values.AgentNamespace
	saNamespace := managedNamespace(r)
	next := tokenLifetime
	for sa, secretName := range tokenSecrets(k, r.values.Mode) {
		old, err := local.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("reading Secret %s/%s: %w", ns, secretName, err)
		}
		if err == nil {
			if renew, ok := renewAt(old); ok && now.Before(renew) {
				next = min(next, renew.Sub(now))
				continue
			}
		}
		token, expires, err := satoken.Request(ctx, managedKube, saNamespace, sa, int64(tokenLifetime/time.Second))
		if err != nil {
			return 0, fmt.Errorf("managed cluster: %w", err)
		}
		kubeconfig, err := tokenKubeconfig(c.managed, token)
		if err != nil {
			return 0, err
		}
		life := expires.Sub(now)
		secret := &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns, Labels: operatorLabels(k.Name),
				Annotations:     map[string]string{tokenExpiryAnnotation: now.Add(life).UTC().Format(time.RFC3339)},
				OwnerReferences: []metav1.OwnerReference{owner}},
			Data: map[string][]byte{ExternalKubeconfigKey: kubeconfig},
		}
		if err := applySecret(ctx, c.management, secret); err != nil {
			return 0, err
		}
		next = min(next, life*4/5)
	}
	return next, nil
}

// renewAt is 80 % into the life of the token in s (from its creation or last write).
func renewAt(s *corev1.Secret) (time.Time, bool) {
	exp, err := time.Parse(time.RFC3339, s.Annotations[tokenExpiryAnnotation])
	if err != nil || len(s.Data[ExternalKubeconfigKey]) == 0 {
		return time.Time{}, false
	}
	written := s.CreationTimestamp.Time
	for _, m := range s.ManagedFields {
		if m.Time != nil && m.Time.After(written) {
			written = m.Time.Time
		}
	}
	return written.Add(exp.Sub(written) * 4 / 5), true
}

// applySecret applies s on the management cluster with the operator's field manager.
func applySecret(ctx context.Context, management *rest.Config, s *corev1.Secret) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return install.ApplyWith(ctx, management, []*unstructured.Unstructured{{Object: m}},
		install.ApplyOptions{FieldManager: OperatorDeployFieldManager, Labels: s.Labels})
}

// tokenKubeconfig is a kubeconfig of cfg's server (and CA) authenticating with token.
func tokenKubeconfig(cfg *rest.Config, token string) ([]byte, error) {
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the managed cluster's CA: %w", err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["managed"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca, TLSServerName: cfg.ServerName, InsecureSkipTLSVerify: cfg.Insecure}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["managed"] = &clientcmdapi.Context{Cluster: "managed", AuthInfo: "agent"}
	kc.CurrentContext = "managed"
	return clientcmd.Write(*kc)
}

// managedNamespace is the klusterlet namespace on the managed cluster: where the agents'
// ServiceAccounts are there.
func managedNamespace(r rendered) string {
	for _, o := range r.managed {
		if o.GetKind() == "ServiceAccount" {
			return o.GetNamespace()
		}
	}
	return operatorv1.KlusterletDefaultNamespace
}

// finalizersFor are the finalizers the operator holds on k: the cleanup one always, the
// Hosted one once the managed cluster could be reached (kept once there).
func finalizersFor(k *operatorv1.Klusterlet, reachable bool) []any {
	out := []any{operatorv1.KlusterletFinalizer}
	if hosted(normalMode(k.Spec.DeployOption.Mode)) && (reachable || controllerutil.ContainsFinalizer(k, operatorv1.KlusterletHostedFinalizer)) {
		out = append(out, operatorv1.KlusterletHostedFinalizer)
	}
	return out
}

// deployments are the names of the Deployments in objs.
func deployments(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			out = append(out, o.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// applyFailed says which side an apply error is from, naming the object.
func applyFailed(err error, side string) (reason, msg string) {
	reason = operatorv1.ReasonManagementClusterResourceApplyFailed
	if side == operatorv1.TargetManaged {
		reason = operatorv1.ReasonManagedClusterResourceApplyFailed
	}
	return reason, fmt.Sprintf("%s cluster: %v", side, err)
}
