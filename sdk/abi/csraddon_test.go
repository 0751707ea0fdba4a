package abi

import (
	"strings"
	"testing"
)

func TestCSRAddonAgreesWithEncodingJSON(t *testing.T) {
	withAddon := sampleReview()
	withAddon.Addon = &CSRAddon{Name: "helloworld", Enabled: true, Registrations: []CSRAddonRegistration{
		{SignerName: "kubernetes.io/kube-apiserver-client", User: awkward, Groups: []string{"g1", awkward}},
		{SignerName: "example.com/signer"},
	}}
	noRegs := sampleReview()
	noRegs.Addon = &CSRAddon{Name: "a"}
	emptyRegs := sampleReview()
	emptyRegs.Addon = &CSRAddon{Name: "a", Registrations: []CSRAddonRegistration{}}
	for name, v := range map[string]*CSRReview{"with add-on": withAddon, "no registrations": noRegs, "empty registrations": emptyRegs} {
		t.Run(name, func(t *testing.T) { checkAgreement(t, v, func() jsonCodec { return &CSRReview{} }) })
	}
	// A registration CSR carries no "addon" member at all: its bytes are those of before.
	if b := sampleReview().AppendJSON(nil); strings.Contains(string(b), "addon") {
		t.Errorf("registration CSR review mentions an add-on: %s", b)
	}
}

func TestCSRAddonDecodeErrors(t *testing.T) {
	for in, msg := range map[string]string{
		`{"addon": {"name": 1}}`:                                   "csr review: addon.name: invalid JSON",
		`{"addon": {"registrations": [{"groups": [1]}]}}`:          "csr review: addon.registrations[0].groups[0]: invalid JSON",
		`{"addon": {"registrations": [{}, {"signerName": true}]}}`: "csr review: addon.registrations[1].signerName: invalid JSON",
		`{"addon": []}`: "csr review: addon: invalid JSON",
	} {
		var r CSRReview
		if err := r.DecodeJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want one containing %q", in, err, msg)
		}
	}
	var r CSRReview
	if err := r.DecodeJSON([]byte(`{"addon": null, "name": "x"}`)); err != nil || r.Addon != nil || r.Name != "x" {
		t.Errorf("null add-on: %+v, %v", r, err)
	}
}
