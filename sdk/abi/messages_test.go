package abi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// jsonCodec is what every JSON message type offers guests.
type jsonCodec interface {
	AppendJSON([]byte) []byte
	DecodeJSON([]byte) error
}

// checkAgreement asserts that the hand-written codec and encoding/json produce the
// same bytes for v, and decode each other's output to the same value.
func checkAgreement(t *testing.T, v jsonCodec, fresh func() jsonCodec) {
	t.Helper()
	std, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if lite := v.AppendJSON(nil); string(lite) != string(std) {
		t.Fatalf("hand-written encoder:\n%s\nencoding/json:\n%s", lite, std)
	}
	got := fresh()
	if err := got.DecodeJSON(std); err != nil {
		t.Fatalf("DecodeJSON(%s): %v", std, err)
	}
	want := fresh()
	if err := json.Unmarshal(std, want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeJSON gives %+v, encoding/json %+v", got, want)
	}
}

var awkward = "quote\" back\\ <tag> & \u2028 ctl\x01 é 🙂 bad\xff"

func sampleReview() *CSRReview {
	return &CSRReview{
		Name: "csr-1", SignerName: "kubernetes.io/kube-apiserver-client", Username: awkward, UID: "u-1",
		Groups: []string{"system:authenticated", awkward}, Usages: []string{},
		Subject:     CSRSubject{CommonName: "system:open-cluster-management:c1:agent", Organizations: nil},
		ClusterName: "c1", ClusterExists: true, ClusterAccepted: false, Renewal: true,
	}
}

func TestJSONAgreesWithEncodingJSON(t *testing.T) {
	i, s, b, raw := int64(-7), awkward, true, `{"a":[1,2]}`
	cases := []struct {
		name  string
		v     jsonCodec
		fresh func() jsonCodec
	}{
		{"csr review", sampleReview(), func() jsonCodec { return &CSRReview{} }},
		{"csr review, zero", &CSRReview{}, func() jsonCodec { return &CSRReview{} }},
		{"csr decision", &CSRDecision{Decision: CSRDeny, Message: awkward}, func() jsonCodec { return &CSRDecision{} }},
		{"csr decision, no message", &CSRDecision{Decision: CSRAbstain}, func() jsonCodec { return &CSRDecision{} }},
		{"feedback request", &FeedbackRequest{Resource: RawJSON(`{"kind":"Deployment","status":{"replicas":3}}`),
			Identifier: ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Name: "web", Namespace: "default"}},
			func() jsonCodec { return &FeedbackRequest{} }},
		{"feedback result", &FeedbackResult{Values: []FeedbackValue{
			{Name: "i", FieldValue: FieldValue{Type: ValueInteger, Integer: &i}},
			{Name: "s", FieldValue: FieldValue{Type: ValueString, String: &s}},
			{Name: "b", FieldValue: FieldValue{Type: ValueBoolean, Boolean: &b}},
			{Name: "r", FieldValue: FieldValue{Type: ValueJsonRaw, JsonRaw: &raw}},
		}}, func() jsonCodec { return &FeedbackResult{} }},
		{"feedback result, empty", &FeedbackResult{Values: []FeedbackValue{}}, func() jsonCodec { return &FeedbackResult{} }},
		{"addon request", &AddOnRequest{AddOnName: "obs", ClusterName: "c1", InstallNamespace: "open-cluster-management-agent-addon",
			Variables: map[string]string{"z": "last", "a": awkward, "m": ""}, Config: RawJSON(`{"replicas":2}`)},
			func() jsonCodec { return &AddOnRequest{} }},
		{"addon request, no config", &AddOnRequest{AddOnName: "obs"}, func() jsonCodec { return &AddOnRequest{} }},
		{"addon request, cluster and configs", &AddOnRequest{AddOnName: "obs", ClusterName: "c1", InstallNamespace: "agents",
			Variables: map[string]string{}, Config: RawJSON(`{"agentInstallNamespace":"agents"}`),
			Cluster: &AddOnCluster{Name: "c1", Labels: map[string]string{"env": "prod", "a": awkward}, Claims: map[string]string{"region": "eu-1"},
				KubernetesVersion: "v1.36.3", Capacity: map[string]int64{"cpu": 8000, "memory": 1 << 50}, Allocatable: map[string]int64{"cpu": 7500, "pods": -1}},
			Configs: []AddOnConfig{{Group: "example.io", Resource: "things", Namespace: "ns", Name: awkward, Object: RawJSON(`{"spec":{"x":1}}`)},
				{Resource: "configmaps", Name: "cm"}},
			HubKubeconfigSecret: "obs-hub-kubeconfig"},
			func() jsonCodec { return &AddOnRequest{} }},
		{"addon request, bare cluster", &AddOnRequest{Cluster: &AddOnCluster{Name: "c1"}}, func() jsonCodec { return &AddOnRequest{} }},
		{"addon result", &AddOnResult{Manifests: []RawJSON{RawJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}},
			func() jsonCodec { return &AddOnResult{} }},
		{"addon result, manifestConfigs", &AddOnResult{Manifests: []RawJSON{RawJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns-1"}}`)},
			ManifestConfigs: []RawJSON{RawJSON(`{"resourceIdentifier":{"resource":"configmaps","name":"x","namespace":"ns-1"},"feedbackRules":[{"type":"WellKnownStatus"}]}`)}},
			func() jsonCodec { return &AddOnResult{} }},
		{"prioritizer inputs", &PrioritizerInputs{ClusterNames: true, Labels: []string{"env"}, Claims: []string{"region"},
			Resources:   []ResourceInput{{Kind: ResourceAllocatable, Name: "cpu"}},
			AddOnScores: []AddOnScoreInput{{ResourceName: "gpu", ScoreName: "free"}}},
			func() jsonCodec { return &PrioritizerInputs{} }},
		{"prioritizer inputs, empty", &PrioritizerInputs{}, func() jsonCodec { return &PrioritizerInputs{} }},
		{"prioritizer inputs, placement", &PrioritizerInputs{Decisions: true, Selected: true}, func() jsonCodec { return &PrioritizerInputs{} }},
		{"prioritizer inputs, decisions", &PrioritizerInputs{Decisions: true, Resources: []ResourceInput{{Kind: ResourceCapacity, Name: "memory"}}},
			func() jsonCodec { return &PrioritizerInputs{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkAgreement(t, tc.v, tc.fresh) })
	}
}

func FuzzCSRReviewAgreement(f *testing.F) {
	f.Add("csr", "system:open-cluster-management:c1:a", "grp", true)
	f.Add("", awkward, "\x00", false)
	f.Fuzz(func(t *testing.T, name, user, group string, renewal bool) {
		r := &CSRReview{Name: name, Username: user, Groups: []string{group}, Usages: []string{user, group},
			Subject: CSRSubject{CommonName: user, Organizations: []string{group}}, ClusterName: name, Renewal: renewal}
		checkAgreement(t, r, func() jsonCodec { return &CSRReview{} })
	})
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		v   jsonCodec
		in  string
		msg string
	}{
		{&CSRReview{}, `{"subject": {"commonName": 5}}`, "csr review: subject.commonName: invalid JSON at offset 27: expected a string"},
		{&CSRReview{}, `{"groups": ["a", 1]}`, "csr review: groups[1]: invalid JSON"},
		{&CSRReview{}, `[]`, "csr review: expected a JSON object"},
		{&CSRReview{}, `{"name": "x"} trailing`, "csr review: invalid JSON at offset 14: unexpected data after the value"},
		{&CSRDecision{}, `{"decision": "Maybe"}`, `csr decision: decision: "Maybe" is not Approve, Deny or Abstain`},
		{&CSRDecision{}, `{}`, `csr decision: decision: "" is not Approve, Deny or Abstain`},
		{&FeedbackResult{}, `{"values": [{"name": "a", "fieldValue": {"type": "Integer"}}]}`, "feedback result: values[0].fieldValue: type Integer needs exactly its own member set"},
		{&FeedbackResult{}, `{"values": [{"name": "a", "fieldValue": {"type": "Integer", "integer": 1, "string": "x"}}]}`, "values[0].fieldValue: type Integer needs exactly"},
		{&FeedbackResult{}, `{"values": [{"name": "a", "fieldValue": {"type": "Float"}}]}`, `values[0].fieldValue.type: "Float" is not Integer, String, Boolean or JsonRaw`},
		{&FeedbackResult{}, `{"values": [{"name": "", "fieldValue": {"type": "Boolean", "boolean": true}}]}`, "values[0].name: must not be empty"},
		{&FeedbackResult{}, `{"values": [{"name": "a", "fieldValue": {"type": "Boolean", "boolean": true}}, {"name": "a", "fieldValue": {"type": "Boolean", "boolean": false}}]}`, `values[1].name: "a" duplicates values[0]`},
		{&FeedbackResult{}, `{"values": [{"name": "a", "fieldValue": {"type": "JsonRaw", "jsonRaw": "{x"}}]}`, "values[0].fieldValue.jsonRaw: not valid JSON"},
		{&FeedbackResult{}, `{"values": [{"name": "a", "fieldValue": {"type": "JsonRaw", "jsonRaw": "\"` + strings.Repeat("x", 1030) + `\""}}]}`, "jsonRaw: 1032 bytes, at most 1024 allowed"},
		{&FeedbackResult{}, `{"values": [{"name": "a", "fieldValue": {"type": "Integer", "integer": 1.5}}]}`, "values[0].fieldValue.integer: invalid JSON"},
		{&AddOnResult{}, `{"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, {"apiVersion": "v1", "metadata": {"name": "b"}}]}`, "addon result: manifests[1].kind: must be set"},
		{&AddOnResult{}, `{"manifests": ["text"]}`, "manifests[0]: expected a JSON object"},
		{&AddOnResult{}, `{"manifests": [{"apiVersion": "v1", "kind": "X", "metadata": {}}]}`, "manifests[0].metadata.name: must be set"},
		{&AddOnResult{}, `{"manifests": [{"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "namespace": "Bad_NS"}}]}`, `manifests[0].metadata.namespace: "Bad_NS" is not a valid namespace name`},
		{&AddOnResult{}, `{"manifests": [], "manifestConfigs": [{"resourceIdentifier": {"resource": "deployments"}}]}`, "addon result: manifestConfigs[0].resourceIdentifier.name: must be set"},
		{&AddOnResult{}, `{"manifests": [], "manifestConfigs": [{"feedbackRules": []}]}`, "manifestConfigs[0].resourceIdentifier: must be set"},
		{&AddOnResult{}, `{"manifests": [], "manifestConfigs": ["x"]}`, "manifestConfigs[0]: expected a JSON object"},
		{&AddOnRequest{}, `{"variables": {"a": 1}}`, "addon request: variables.a: invalid JSON"},
		{&AddOnRequest{}, `{"cluster": {"allocatable": {"cpu": "4"}}}`, "addon request: cluster.allocatable.cpu: invalid JSON"},
		{&AddOnRequest{}, `{"configs": [{"name": "a"}, {"name": 2}]}`, "addon request: configs[1].name: invalid JSON"},
		{&FeedbackRequest{}, `{"resource": {"a": }}`, "feedback request: resource: invalid JSON"},
		{&PrioritizerInputs{}, `{"resources": [{"kind": 1}]}`, "prioritizer inputs: resources[0].kind: invalid JSON"},
	} {
		err := tc.v.DecodeJSON([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%T %s: error %v, want one containing %q", tc.v, tc.in, err, tc.msg)
		}
	}
}

func TestUnknownFieldsAreIgnored(t *testing.T) {
	var d CSRDecision
	if err := d.DecodeJSON([]byte(`{"decision": "Approve", "future": {"nested": [1, 2]}, "message": "ok"}`)); err != nil {
		t.Fatal(err)
	}
	if d.Decision != CSRApprove || d.Message != "ok" {
		t.Fatalf("decoded %+v", d)
	}
}

func TestFeedbackValueHelpers(t *testing.T) {
	r := FeedbackResult{Values: []FeedbackValue{IntegerValue("i", 3), StringValue("s", "x"), BooleanValue("b", false), JsonRawValue("r", []byte(`[1]`))}}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	var back FeedbackResult
	if err := back.DecodeJSON(r.AppendJSON(nil)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip %+v, want %+v", back, r)
	}
}

func TestAddOnRequestHelpers(t *testing.T) {
	var none AddOnRequest
	if none.Claim("region") != "" {
		t.Error("Claim without a cluster")
	}
	if _, ok := none.Allocatable("cpu"); ok {
		t.Error("Allocatable without a cluster")
	}
	r := AddOnRequest{Cluster: &AddOnCluster{Claims: map[string]string{"region": "eu-1"}, Allocatable: map[string]int64{"cpu": 3500}}}
	if r.Claim("region") != "eu-1" {
		t.Errorf("Claim = %q", r.Claim("region"))
	}
	if v, ok := r.Allocatable("cpu"); !ok || v != 3500 {
		t.Errorf("Allocatable(cpu) = %d, %v", v, ok)
	}
	if _, ok := r.Allocatable("memory"); ok {
		t.Error("Allocatable(memory) reported")
	}
}
