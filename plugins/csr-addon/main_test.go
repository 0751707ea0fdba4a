package main

import (
	"context"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/plugins/csr-addon/rule"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

// TestShippedModule runs the rule's cases against the module in plugins/dist.
func TestShippedModule(t *testing.T) {
	p, err := dist.Get("csr-addon")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := p.Wasm()
	if err != nil {
		t.Fatal(err)
	}
	m := wasmrun.Load(t, mod, abi.TypeCSRApproval, nil)
	for _, tc := range rule.Cases() {
		req := rule.Sample()
		tc.Modify(&req)
		d, err := wasmrun.ReviewCSR(context.Background(), m, req)
		if err != nil {
			t.Fatalf("%s: %v", tc.Name, err)
		}
		if d.Decision != tc.Want || !strings.Contains(d.Message, tc.Msg) {
			t.Errorf("%s: decision %s %q, want %s with %q", tc.Name, d.Decision, d.Message, tc.Want, tc.Msg)
		}
	}
}
