package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

var request = abi.AddOnRequest{
	AddOnName: "observability", ClusterName: "cluster1", InstallNamespace: "open-cluster-management-agent-addon",
	Variables: map[string]string{"image": "quay.io/example/agent:v1"},
	Config:    abi.RawJSON(`{"replicas": 2}`),
}

type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
	Spec struct {
		Replicas int64 `json:"replicas"`
		Template struct {
			Spec struct {
				Containers []struct {
					Image string `json:"image"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

func check(t *testing.T, res abi.AddOnResult) {
	t.Helper()
	if len(res.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(res.Manifests))
	}
	var cm, d object
	if err := json.Unmarshal(res.Manifests[0], &cm); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(res.Manifests[1], &d); err != nil {
		t.Fatal(err)
	}
	if cm.Kind != "ConfigMap" || cm.Metadata.Name != "observability-agent" || cm.Metadata.Namespace != request.InstallNamespace || cm.Data["clusterName"] != "cluster1" {
		t.Fatalf("ConfigMap %+v", cm)
	}
	if d.Kind != "Deployment" || d.Spec.Replicas != 2 || len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.Containers[0].Image != "quay.io/example/agent:v1" {
		t.Fatalf("Deployment %+v", d)
	}
}

func TestRender(t *testing.T) {
	res, err := sdktest.RenderAddOn(template{}, sdktest.NewHost(""), request)
	if err != nil {
		t.Fatal(err)
	}
	check(t, res)
}

func TestRenderErrors(t *testing.T) {
	for _, tc := range []struct {
		modify func(*abi.AddOnRequest)
		msg    string
	}{
		{func(r *abi.AddOnRequest) { r.Variables = nil }, "variables.image: must be set"},
		{func(r *abi.AddOnRequest) { r.Config = abi.RawJSON(`{"replicas": -1}`) }, "config.replicas: must be a non-negative integer"},
	} {
		req := request
		tc.modify(&req)
		if _, err := sdktest.RenderAddOn(template{}, sdktest.NewHost(""), req); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("error %v, want one containing %q", err, tc.msg)
		}
	}
}

func TestBuiltModule(t *testing.T) {
	m := wasmrun.Load(t, wasmrun.Build(t, "."), abi.TypeAddOnTemplate, nil)
	res, err := wasmrun.RenderAddOn(context.Background(), m, request)
	if err != nil {
		t.Fatal(err)
	}
	check(t, res)
}
