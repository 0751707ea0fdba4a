package abi

import (
	"strconv"
	"strings"
	"testing"
)

func TestFeedbackResourcesJSONAgreesWithEncodingJSON(t *testing.T) {
	for name, d := range map[string]*FeedbackResources{
		"kinds": {Resources: []GroupKind{{Group: "apps", Kind: "Deployment"}, {Kind: "Pod"}, {Group: "cert-manager.io", Kind: awkward}}},
		"empty": {Resources: []GroupKind{}},
		"nil":   {},
	} {
		t.Run(name, func(t *testing.T) { checkAgreement(t, d, func() jsonCodec { return &FeedbackResources{} }) })
	}
}

func TestFeedbackResourcesDecode(t *testing.T) {
	var d FeedbackResources
	// An absent group is the core group; unknown fields are ignored.
	if err := d.DecodeJSON([]byte(`{"resources":[{"kind":"Pod","version":"v1"},{"group":"apps","kind":"Deployment"}],"future":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if !d.Serves("", "Pod") || !d.Serves("apps", "Deployment") || d.Serves("", "Deployment") || d.Serves("apps", "Pod") {
		t.Fatalf("Serves disagrees with %+v", d.Resources)
	}
	for doc, want := range map[string]string{
		`[]`:                           "feedback resources: expected a JSON object",
		`{"resources":[{"kind":3}]}`:   "feedback resources: resources[0].kind: invalid JSON",
		`{"resources":{"kind":"Pod"}}`: "feedback resources: resources: invalid JSON",
	} {
		if err := d.DecodeJSON([]byte(doc)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("DecodeJSON(%s) = %v, want an error starting %q", doc, err, want)
		}
	}
}

func TestFeedbackResourcesValidate(t *testing.T) {
	many := make([]GroupKind, MaxFeedbackResources+1)
	for i := range many {
		many[i] = GroupKind{Kind: "K" + strconv.Itoa(i)}
	}
	for _, ok := range [][]GroupKind{
		{{Kind: "Pod"}},
		{{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}},
		{{Group: "cert-manager.io", Kind: "Certificate"}, {Group: "x.k8s.io", Kind: "Gateway-v2"}},
		many[:MaxFeedbackResources],
	} {
		d := FeedbackResources{Resources: ok}
		if err := d.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for want, bad := range map[string][]GroupKind{
		"feedback resources: resources: must declare at least one group/kind":             nil,
		"feedback resources: resources: 65 entries, at most 64 allowed":                   many,
		`feedback resources: resources[0].kind: "" is not a kind`:                         {{Group: "apps"}},
		`feedback resources: resources[0].kind: "1Pod" is not a kind`:                     {{Kind: "1Pod"}},
		`feedback resources: resources[0].kind: "Pod*" is not a kind`:                     {{Kind: "Pod*"}},
		`feedback resources: resources[0].kind: "Pod-" is not a kind`:                     {{Kind: "Pod-"}},
		`feedback resources: resources[1].group: "Apps" is not an API group`:              {{Kind: "Pod"}, {Group: "Apps", Kind: "Deployment"}},
		`feedback resources: resources[0].group: "apps..io" is not an API group`:          {{Group: "apps..io", Kind: "Deployment"}},
		`feedback resources: resources[0].group: "-apps" is not an API group`:             {{Group: "-apps", Kind: "Deployment"}},
		`feedback resources: resources[0].group: "apps." is not an API group`:             {{Group: "apps.", Kind: "Deployment"}},
		"feedback resources: resources[2]: Deployment.apps duplicates resources[0]":       {{Group: "apps", Kind: "Deployment"}, {Kind: "Deployment"}, {Group: "apps", Kind: "Deployment"}},
		`feedback resources: resources[0].kind: "` + strings.Repeat("K", 64) + `" is not`: {{Kind: strings.Repeat("K", 64)}},
	} {
		d := FeedbackResources{Resources: bad}
		if err := d.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate(%+v) = %v, want an error starting %q", bad, err, want)
		}
	}
}

func TestGroupKindString(t *testing.T) {
	if s := (GroupKind{Kind: "Pod"}).String(); s != "Pod" {
		t.Errorf("core: %q", s)
	}
	if s := (GroupKind{Group: "apps", Kind: "Deployment"}).String(); s != "Deployment.apps" {
		t.Errorf("apps: %q", s)
	}
}
