package bootstrap

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestTokenKubeconfig(t *testing.T) {
	hub := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("CA")}}
	b, err := TokenKubeconfig(hub, "tok")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != hub.Host || cfg.BearerToken != "tok" || string(cfg.CAData) != "CA" {
		t.Errorf("round trip: host %q token %q ca %q", cfg.Host, cfg.BearerToken, cfg.CAData)
	}
	if _, err := TokenKubeconfig(&rest.Config{Host: "https://h"}, "tok"); err == nil || !strings.Contains(err.Error(), "CA") {
		t.Errorf("no CA: want an error, got %v", err)
	}
}

func TestRandomToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok := randomToken(16)
		if len(tok) != 16 || strings.Trim(tok, tokenChars) != "" {
			t.Fatalf("token %q: want 16 characters of [a-z0-9]", tok)
		}
		seen[tok] = true
	}
	if len(seen) != 100 {
		t.Errorf("%d distinct tokens of 100", len(seen))
	}
}
