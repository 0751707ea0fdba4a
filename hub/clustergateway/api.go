package clustergateway

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
)

var gatewaysResource = clustergatewayv1alpha1.Resource(clustergatewayv1alpha1.ResourceClusterGateways)

// discovery is the APIResourceList of the version (design-23 §5.5).
func discovery() *metav1.APIResourceList {
	gv := clustergatewayv1alpha1.GroupVersion
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{APIVersion: "v1", Kind: "APIResourceList"},
		GroupVersion: gv.String(),
		APIResources: []metav1.APIResource{
			{Name: clustergatewayv1alpha1.ResourceClusterGateways, SingularName: clustergatewayv1alpha1.SingularClusterGateway,
				Kind: "ClusterGateway", Verbs: metav1.Verbs{"get", "list"}},
			{Name: clustergatewayv1alpha1.ResourceClusterGateways + "/" + clustergatewayv1alpha1.SubresourceProxy,
				Kind: "ClusterGatewayProxyOptions", Verbs: metav1.Verbs{"create", "delete", "get", "patch", "update"}},
			{Name: clustergatewayv1alpha1.ResourceClusterGateways + "/" + clustergatewayv1alpha1.SubresourceHealth,
				Kind: "ClusterGateway", Verbs: metav1.Verbs{"get"}},
		},
	}
}

func (g *Gateway) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, apierrors.NewMethodNotSupported(gatewaysResource, strings.ToLower(r.Method)))
		return
	}
	writeJSON(w, http.StatusOK, discovery())
}

// serveList answers GET clustergateways, as a Table when asked; a watch is refused (405), as
// upstream does: ClusterGateways are read from Secrets and not watched here.
func (g *Gateway) serveList(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, apierrors.NewMethodNotSupported(gatewaysResource, strings.ToLower(r.Method)))
		return
	}
	if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
		writeStatus(w, apierrors.NewMethodNotSupported(gatewaysResource, "watch"))
		return
	}
	secrets := &corev1.SecretList{}
	if err := g.opts.Reader.List(r.Context(), secrets, client.InNamespace(g.opts.SecretNamespace),
		client.HasLabels{clustergatewayv1alpha1.LabelKeyClusterCredentialType}); err != nil {
		writeStatus(w, apierrors.NewInternalError(fmt.Errorf("listing the credential Secrets of %s: %w", g.opts.SecretNamespace, err)))
		return
	}
	sort.Slice(secrets.Items, func(i, j int) bool { return secrets.Items[i].Name < secrets.Items[j].Name })
	list := &clustergatewayv1alpha1.ClusterGatewayList{
		TypeMeta: metav1.TypeMeta{APIVersion: clustergatewayv1alpha1.GroupVersion.String(), Kind: "ClusterGatewayList"},
		Items:    []clustergatewayv1alpha1.ClusterGateway{},
	}
	for i := range secrets.Items {
		list.Items = append(list.Items, *g.gatewayOf(&secrets.Items[i]))
	}
	if table, ok := tableOf(r, list.Items); ok {
		writeJSON(w, http.StatusOK, table)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// serveGet answers GET clustergateways/<name> (and its health subresource, the same object).
func (g *Gateway) serveGet(w http.ResponseWriter, r *http.Request, name string, health bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, apierrors.NewMethodNotSupported(gatewaysResource, strings.ToLower(r.Method)))
		return
	}
	s, err := g.credentialSecret(r.Context(), name)
	if err != nil {
		writeStatus(w, err)
		return
	}
	if s == nil {
		writeStatus(w, apierrors.NewNotFound(gatewaysResource, name))
		return
	}
	gw := g.gatewayOf(s)
	if table, ok := tableOf(r, []clustergatewayv1alpha1.ClusterGateway{*gw}); ok && !health {
		writeJSON(w, http.StatusOK, table)
		return
	}
	writeJSON(w, http.StatusOK, gw)
}

// credentialSecret is the ClusterGateway Secret of cluster: nil when it does not exist or has
// no credential-type label (upstream: not a ClusterGateway).
func (g *Gateway) credentialSecret(ctx context.Context, cluster string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := g.opts.Reader.Get(ctx, client.ObjectKey{Namespace: g.opts.SecretNamespace, Name: cluster}, s)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("reading Secret %s/%s: %w", g.opts.SecretNamespace, cluster, err))
	case s.Labels[clustergatewayv1alpha1.LabelKeyClusterCredentialType] == "":
		return nil, nil
	}
	return s, nil
}

// gatewayOf is the ClusterGateway a credential Secret stands for. Credentials are redacted
// (their type is kept): the token is for the gateway's own use, and clients reach the cluster
// through the proxy subresource.
func (g *Gateway) gatewayOf(s *corev1.Secret) *clustergatewayv1alpha1.ClusterGateway {
	gw := &clustergatewayv1alpha1.ClusterGateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: clustergatewayv1alpha1.GroupVersion.String(), Kind: "ClusterGateway"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, CreationTimestamp: s.CreationTimestamp},
	}
	endpoint := clustergatewayv1alpha1.ClusterEndpointType(s.Labels[clustergatewayv1alpha1.LabelKeyClusterEndpointType])
	if endpoint == "" {
		endpoint = clustergatewayv1alpha1.ClusterEndpointTypeConst
	}
	gw.Spec.Access.Endpoint = &clustergatewayv1alpha1.ClusterEndpoint{Type: endpoint}
	if endpoint == clustergatewayv1alpha1.ClusterEndpointTypeConst {
		c := &clustergatewayv1alpha1.ClusterEndpointConst{Address: string(s.Data[clustergatewayv1alpha1.SecretKeyEndpoint]), CABundle: caOf(s)}
		if p := s.Data[clustergatewayv1alpha1.SecretKeyProxyURL]; len(p) > 0 {
			u := string(p)
			c.ProxyURL = &u
		}
		gw.Spec.Access.Endpoint.Const = c
	}
	gw.Spec.Access.Credential = &clustergatewayv1alpha1.ClusterAccessCredential{
		Type: clustergatewayv1alpha1.CredentialType(s.Labels[clustergatewayv1alpha1.LabelKeyClusterCredentialType]),
	}
	switch endpoint {
	case clustergatewayv1alpha1.ClusterEndpointTypeClusterProxy:
		// Health from what the hub knows (tunnel and credential), not a probe: bounded work
		// on large fleets (design-23 Q7).
		connected, seen := g.opts.Dialer.Connected(s.Name)
		switch {
		case len(s.Data[clustergatewayv1alpha1.SecretKeyToken]) == 0:
			gw.Status.HealthyReason = clustergatewayv1alpha1.HealthyReasonTypeUnknownPrefix + " no token in the credential Secret"
		case !connected:
			gw.Status.HealthyReason = clustergatewayv1alpha1.HealthyReasonTypeUnknownPrefix + clustergatewayv1alpha1.HealthyReasonType(" "+tunnelDown(s.Name, seen))
		default:
			gw.Status.Healthy = true
		}
	default:
		gw.Status.Healthy = s.Annotations[clustergatewayv1alpha1.AnnotationKeyClusterGatewayStatusHealthy] == "true"
		gw.Status.HealthyReason = clustergatewayv1alpha1.HealthyReasonType(s.Annotations[clustergatewayv1alpha1.AnnotationKeyClusterGatewayStatusHealthyReason])
	}
	return gw
}

// caOf is the cluster CA of a credential Secret: ca.crt, or upstream's older key ca.
func caOf(s *corev1.Secret) []byte {
	if ca := s.Data[clustergatewayv1alpha1.SecretKeyCACrt]; len(ca) > 0 {
		return ca
	}
	return s.Data[clustergatewayv1alpha1.SecretKeyCA]
}

// tableOf renders gateways as the meta.k8s.io Table the request's Accept header asks for
// (kubectl get), if it asks for one.
func tableOf(r *http.Request, gateways []clustergatewayv1alpha1.ClusterGateway) (*metav1.Table, bool) {
	version := ""
	for _, accept := range strings.Split(r.Header.Get("Accept"), ",") {
		_, params, err := mime.ParseMediaType(strings.TrimSpace(accept))
		if err != nil || params["as"] != "Table" || params["g"] != metav1.GroupName {
			continue
		}
		if v := params["v"]; v == "v1" || v == "v1beta1" {
			version = v
			break
		}
	}
	if version == "" {
		return nil, false
	}
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{APIVersion: metav1.GroupName + "/" + version, Kind: "Table"},
		ColumnDefinitions: clustergatewayv1alpha1.TableColumns(),
		Rows:              []metav1.TableRow{},
	}
	include := metav1.IncludeMetadata
	if v := r.URL.Query().Get("includeObject"); v != "" {
		include = metav1.IncludeObjectPolicy(v)
	}
	for i := range gateways {
		gw := &gateways[i]
		row := metav1.TableRow{Cells: clustergatewayv1alpha1.TableCells(gw)}
		switch include {
		case metav1.IncludeObject:
			row.Object = runtime.RawExtension{Object: gw}
		case metav1.IncludeMetadata:
			m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: gw.ObjectMeta}
			row.Object = runtime.RawExtension{Object: m}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code, data = http.StatusInternalServerError, []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"encoding the response","code":500}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeStatus answers with err as a metav1.Status (an APIStatus), as an API server does.
func writeStatus(w http.ResponseWriter, err error) {
	var st metav1.Status
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	writeJSON(w, int(st.Code), &st)
}

func notFound(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: msg}}
}

// statusError is a metav1.Status error with code, reason and message.
func statusError(code int, reason metav1.StatusReason, format string, args ...any) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: fmt.Sprintf(format, args...)}}
}
