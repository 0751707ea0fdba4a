package hash

import "testing"

func TestStable(t *testing.T) {
	// sha256 of {"a":["x"],"b":1}, keys sorted. Recorded on objects (ManifestWorkReplicaSet template hashes, OCM's config spec hashes):
	// a change here would roll every work out again.
	if got, want := MustJSON(map[string]any{"b": 1, "a": []any{"x"}}), "9bfce180614e8aaffe8a52084e7be3ee3b4c2e740cae2793550177f953f11c04"; got != want {
		t.Errorf("MustJSON = %s, want %s", got, want)
	}
	if got := Short(Bytes([]byte("x"))); got != "2d711642b726b044" {
		t.Errorf("Short(Bytes(x)) = %s", got)
	}
	if _, err := JSON(func() {}); err == nil {
		t.Error("JSON of a func: no error")
	}
}
