package clusterproxy

import "testing"

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"https://10.0.0.1:6443":      "10.0.0.1:6443",
		"https://api.example.com":    "api.example.com:443",
		"http://127.0.0.1":           "127.0.0.1:80",
		"127.0.0.1:6443":             "127.0.0.1:6443",
		"kubernetes.default.svc":     "kubernetes.default.svc:443",
		"https://[::1]:6443/prefix":  "[::1]:6443",
		"https://api.example.com/x/": "api.example.com:443",
	} {
		if got, err := hostPort(in); err != nil || got != want {
			t.Errorf("hostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
