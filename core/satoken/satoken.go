// Package satoken lets a process act as a Kubernetes ServiceAccount it may request tokens
// for: a rest.Config whose requests carry short-lived tokens of that ServiceAccount from the
// TokenRequest API (serviceaccounts/token), requested with another identity and renewed
// before they expire. No Secret holds a long-lived token. The klusterlet's work agent acts as
// <klusterlet>-work-sa this way, and the end-to-end suites' in-process klusterlets as their
// agent ServiceAccount.
package satoken

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// DefaultLifetime is the lifetime of the tokens asked for; a token is renewed once 80% of it
// has passed, or at once when the API server rejects it (401).
const DefaultLifetime = time.Hour

// requestTimeout bounds one TokenRequest.
const requestTimeout = 30 * time.Second

// minLifetime is the shortest expirationSeconds the API server accepts.
const minLifetime = 10 * time.Minute

// Options configures Config.
type Options struct {
	// Lifetime of the tokens asked for; default DefaultLifetime, at least 10 minutes.
	Lifetime time.Duration
	// UserAgent of the returned config; default base's.
	UserAgent string
}

// Config returns a config for base's API server (host and CA only: none of base's
// credentials) that authenticates as ServiceAccount namespace/name, with tokens requested
// with base's identity until ctx ends. It requests the first token now, so that a missing
// ServiceAccount or a missing right to its tokens is reported here, naming both.
func Config(ctx context.Context, base *rest.Config, namespace, name string, opts Options) (*rest.Config, error) {
	switch {
	case namespace == "" || name == "":
		return nil, errors.New("service account token: namespace and name are required")
	case opts.Lifetime == 0:
		opts.Lifetime = DefaultLifetime
	case opts.Lifetime < minLifetime:
		return nil, fmt.Errorf("service account token: lifetime %s is shorter than the API server's minimum of %s", opts.Lifetime, minLifetime)
	}
	kube, err := kubernetes.NewForConfig(base)
	if err != nil {
		return nil, fmt.Errorf("service account token of %s/%s: %w", namespace, name, err)
	}
	src := &source{ctx: ctx, kube: kube, namespace: namespace, name: name, lifetime: opts.Lifetime, now: time.Now}
	cached := transport.NewCachedTokenSource(src)
	if _, err := cached.Token(); err != nil {
		return nil, err
	}
	cfg := rest.AnonymousClientConfig(base)
	if opts.UserAgent != "" {
		cfg.UserAgent = opts.UserAgent
	}
	// Resettable: a token the API server rejects (its ServiceAccount recreated, say) is
	// replaced on the next request.
	cfg.Wrap(transport.ResettableTokenSourceWrapTransport(cached))
	return cfg, nil
}

// Request asks the API server of kube for a token of ServiceAccount namespace/name that lives
// seconds (the API server refuses fewer than 600 and may cap the lifetime), with no audience
// (the API server's own). It returns the token and when it really expires, as the API server
// issued it. The request is bounded by requestTimeout within ctx.
func Request(ctx context.Context, kube kubernetes.Interface, namespace, name string, seconds int64) (string, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, tr.Status.ExpirationTimestamp.Time, nil
}

// source requests a token per call.
type source struct {
	ctx             context.Context
	kube            kubernetes.Interface
	namespace, name string
	lifetime        time.Duration
	now             func() time.Time
}

func (s *source) Token() (*oauth2.Token, error) {
	issued := s.now()
	token, expires, err := Request(s.ctx, s.kube, s.namespace, s.name, int64(s.lifetime/time.Second))
	if err != nil {
		return nil, err
	}
	// Expiry is when the cache asks again: 80% into the token's life, so a failed renewal
	// leaves the current token a fifth of its life to be retried in.
	renew := issued.Add(expires.Sub(issued) * 4 / 5)
	return &oauth2.Token{AccessToken: token, TokenType: "Bearer", Expiry: renew}, nil
}
