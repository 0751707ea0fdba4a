package feedback

import (
	"reflect"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

func TestConditionStatus(t *testing.T) {
	for doc, want := range map[string]struct {
		status string
		found  bool
	}{
		`{"status":{"conditions":[{"type":"Progressing","status":"True"},{"type":"Ready","status":"False"}]}}`: {"False", true},
		`{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Ready","status":"False"}]}}`:       {"True", true},
		`{"status":{"conditions":[{"type":"Ready"},{"type":"Ready","status":"Unknown"}]}}`:                     {"Unknown", true},
		`{"status":{"conditions":[{"type":"Ready","status":null}]}}`:                                           {"", false},
		`{"status":{"conditions":null}}`: {"", false},
		`{"status":{}}`:                  {"", false},
		`{}`:                             {"", false},
	} {
		status, found, err := ConditionStatus([]byte(doc), "Ready")
		if err != nil || status != want.status || found != want.found {
			t.Errorf("%s: %q %v %v, want %q %v", doc, status, found, err, want.status, want.found)
		}
	}
	if _, _, err := ConditionStatus([]byte(`{"status":{"conditions":{"type":"Ready"}}}`), "Ready"); err == nil || !strings.HasPrefix(err.Error(), "status.conditions: ") {
		t.Errorf("conditions that are not a list: %v", err)
	}
}

func TestValueHelpers(t *testing.T) {
	obj := []byte(`{"status":{"replicas":3,"phase":"Running","gone":null,"conditions":[{"type":"Ready","status":"True"}]}}`)
	var res abi.FeedbackResult
	for _, err := range []error{
		Integer(&res, obj, "Replicas", "status", "replicas"),
		Integer(&res, obj, "Missing", "status", "missing"),
		Integer(&res, obj, "Gone", "status", "gone"),
		String(&res, obj, "Phase", "status", "phase"),
		Condition(&res, obj, "Ready", "Ready"),
		Condition(&res, obj, "Complete", "Complete"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []abi.FeedbackValue{abi.IntegerValue("Replicas", 3), abi.StringValue("Phase", "Running"), abi.StringValue("Ready", "True")}
	if !reflect.DeepEqual(res.Values, want) {
		t.Fatalf("values %v, want %v", res.Values, want)
	}
	if err := String(&res, obj, "Replicas", "status", "replicas"); err == nil || !strings.HasPrefix(err.Error(), "status.replicas: ") {
		t.Fatalf("a number read as a string: %v", err)
	}
}
