package policy

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// How policies are installed on a hub: ConfigMaps in the hub's namespace carrying this label,
// each data key ending in .rego a file (keys ending in _test.rego are its tests).
const (
	ConfigMapLabel      = "flotilla.dev/policy"
	ConfigMapLabelValue = "true"
	// DefaultNamespace is the hub's namespace, where policy ConfigMaps live.
	DefaultNamespace = "open-cluster-management-hub"
	// EmbeddedSourceName names the defaults built into the hub (policies/).
	EmbeddedSourceName = "embedded"
	// Reasons of the Events the hub records on a policy ConfigMap.
	EventReasonLoaded   = "PolicyLoaded"
	EventReasonRejected = "PolicyRejected"
)

// ConfigMapSourceName names the source of a ConfigMap in denials, Events and metrics.
func ConfigMapSourceName(namespace, name string) string {
	return "configmap " + namespace + "/" + name
}

// SourceFromConfigMap is the source of a policy ConfigMap: its data keys ending in .rego, by
// name. Other keys are ignored.
func SourceFromConfigMap(cm *corev1.ConfigMap) Source {
	s := Source{Name: ConfigMapSourceName(cm.Namespace, cm.Name)}
	for k, v := range cm.Data {
		if strings.HasSuffix(k, ".rego") {
			s.Files = append(s.Files, File{Name: k, Content: v})
		}
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Name < s.Files[j].Name })
	return s
}
