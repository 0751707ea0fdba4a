package operator

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/install"
)

// The values ConfigMap of a Klusterlet: the klusterlet chart's Flotilla-only values (flags,
// replicas, resources, ...), which no Klusterlet field carries. The chart's render: operator
// writes it (so `flotilla join --set/--values` and `helm install` reach the agents); the
// operator renders the agents with it under the Klusterlet's values. It lives in the agent
// namespace, as the bootstrap Secret does: one per Klusterlet, on the cluster where its
// agents run (a Hosted Klusterlet's own namespace on the hosting cluster).
const (
	ValuesConfigMap = "flotilla-klusterlet-values"
	ValuesKey       = "values.yaml"
)

// maxValuesBytes caps the values ConfigMap read (a ConfigMap holds at most 1 MiB anyway).
const maxValuesBytes = 1 << 20

// alwaysOwned are the chart values only the operator sets (with ValuesFor's): the
// bootstrap kubeconfig is its Secret's, which the operator does not render.
var alwaysOwned = []string{"bootstrapHubKubeconfig"}

// readValues reads the values ConfigMap in namespace; a missing one is no values. Errors name
// the ConfigMap and its key.
func readValues(ctx context.Context, r client.Reader, namespace string) (map[string]any, error) {
	cm := &corev1.ConfigMap{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ValuesConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, ValuesConfigMap, err)
	}
	return parseValues(namespace, cm.Data[ValuesKey])
}

// parseValues reads data, key ValuesKey of the values ConfigMap in namespace.
func parseValues(namespace, data string) (map[string]any, error) {
	if len(data) > maxValuesBytes {
		return nil, fmt.Errorf("ConfigMap %s/%s: %s has %d bytes, more than %d", namespace, ValuesConfigMap, ValuesKey, len(data), maxValuesBytes)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal([]byte(data), &values); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %s: %w", namespace, ValuesConfigMap, ValuesKey, err)
	}
	if values == nil { // "null" or only comments
		values = map[string]any{}
	}
	return values, nil
}

// configMapSettable are the values the values ConfigMap may set: how the agents run (their
// flags, replicas, resources, scheduling, probes' ports). What decides what the agents may do
// or run (rbac, image, securityContext, podSecurityContext, builtinAddons, ...) is the
// Klusterlet's or the chart's: whoever may write a ConfigMap in the agent namespace must not
// gain more than that.
var configMapSettable = []string{"flags", "replicas", "leaderElection", "resources", "nodeSelector", "tolerations",
	"affinity", "podAnnotations", "priorityClassName", "imagePullSecrets", "metrics", "health"}

// agentValues are the values the operator renders a Klusterlet's agents with: the values
// ConfigMap's under the Klusterlet's (v.Chart). A top-level value the Klusterlet sets is the
// Klusterlet's whole (maps are not merged: its nodeSelector is the agents'); ignored lists the
// ConfigMap's values dropped so that differ from the chart's defaults, for the Applied message.
// A value outside configMapSettable that differs from the chart's default is an error naming
// it (the chart's render: operator writes every value, defaults included).
func agentValues(configMap map[string]any, v Values) (values map[string]any, ignored []string, err error) {
	base := map[string]any{}
	var refused []string
	for k, val := range configMap {
		_, owned := v.Chart[k]
		differs := !reflect.DeepEqual(toValue(val), toValue(chartDefault(k)))
		switch {
		case owned || slices.Contains(alwaysOwned, k):
			if differs {
				ignored = append(ignored, k)
			}
		case slices.Contains(configMapSettable, k):
			base[k] = val
		case differs:
			refused = append(refused, k)
		}
	}
	slices.Sort(ignored)
	if len(refused) > 0 {
		slices.Sort(refused)
		return nil, ignored, fmt.Errorf("ConfigMap %s/%s: %s: %s may not be set there (only %s; the rest is the Klusterlet's or the chart's)",
			v.AgentNamespace, ValuesConfigMap, ValuesKey, strings.Join(refused, ", "), strings.Join(configMapSettable, ", "))
	}
	return install.MergeValues(base, v.Chart), ignored, nil
}
