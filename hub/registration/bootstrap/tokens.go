package bootstrap

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// Join tokens are the credentials `flotilla get token` hands to a managed cluster's admin.
// Kubernetes keeps no record of a ServiceAccount token it issued, so each one is bound to a
// Secret of its own (TokenRequest boundObjectRef): listing those Secrets lists the tokens, and
// deleting one revokes its token (the API server checks the bound object when it
// authenticates the token, and keeps a success in its token cache for 10 s, so a token used in
// the last 10 s works until that entry expires). Bootstrap tokens are Secrets already.
const (
	// JoinTokenLabel marks the Secrets that ServiceAccount join tokens are bound to.
	JoinTokenLabel = "flotilla.dev/join-token"
	// JoinTokenSecretPrefix starts their names: join-token-<id>.
	JoinTokenSecretPrefix = "join-token-"
	// ExpirationAnnotation on a join-token Secret says when its token expires (RFC 3339).
	ExpirationAnnotation = "flotilla.dev/expiration"
	// MinServiceAccountTokenTTL is the API server's shortest ServiceAccount token.
	MinServiceAccountTokenTTL = 10 * time.Minute
	// DefaultJoinTokenTTL is how long `flotilla get token`'s tokens live, as OCM recommends
	// for bootstrap credentials ("hour-ish").
	DefaultJoinTokenTTL = time.Hour

	managedByLabel = "app.kubernetes.io/managed-by"
)

// TokenKind says which bootstrap identity a join token authenticates as.
type TokenKind string

const (
	// ServiceAccountToken authenticates as the ServiceAccount agent-registration-bootstrap.
	ServiceAccountToken TokenKind = "serviceaccount"
	// BootstrapToken is a Kubernetes bootstrap token, user system:bootstrap:<id> in
	// rbac.BootstrapGroup.
	BootstrapToken TokenKind = "bootstrap-token"
)

// Token describes an issued join token (never its secret part).
type Token struct {
	ID      string
	Kind    TokenKind
	Expires time.Time
	// Identity is the user the token authenticates as.
	Identity string
}

// TokenOptions say what token to issue.
type TokenOptions struct {
	// TTL is the token's life; 0 means DefaultJoinTokenTTL. ServiceAccount tokens live at
	// least MinServiceAccountTokenTTL.
	TTL time.Duration
	// Kind defaults to ServiceAccountToken.
	Kind TokenKind
	// ServiceAccount in rbac.BootstrapNamespace; empty means rbac.BootstrapServiceAccount.
	ServiceAccount string
}

// IssueToken creates a join token and returns its bearer value and description. Ensure (run
// by the hub on start) must have created the bootstrap identities.
func IssueToken(ctx context.Context, kube kubernetes.Interface, o TokenOptions) (string, Token, error) {
	if o.TTL == 0 {
		o.TTL = DefaultJoinTokenTTL
	}
	if o.TTL < 0 {
		return "", Token{}, fmt.Errorf("join token: duration %s must be positive", o.TTL)
	}
	issue := func() (string, Token, error) { return issueServiceAccountToken(ctx, kube, o) }
	switch o.Kind {
	case BootstrapToken:
		issue = func() (string, Token, error) { return issueBootstrapToken(ctx, kube, o.TTL) }
	case ServiceAccountToken, "":
		if o.TTL < MinServiceAccountTokenTTL {
			return "", Token{}, fmt.Errorf("join token: duration %s is shorter than the %s a ServiceAccount token lives at least (a bootstrap token can be shorter)", o.TTL, MinServiceAccountTokenTTL)
		}
	default:
		return "", Token{}, fmt.Errorf("join token: unknown kind %q", o.Kind)
	}
	// Issuing is where tokens are managed: the expired ones' Secrets go first (listing only reads).
	if _, err := PruneExpiredTokens(ctx, kube); err != nil {
		return "", Token{}, err
	}
	return issue()
}

func issueServiceAccountToken(ctx context.Context, kube kubernetes.Interface, o TokenOptions) (string, Token, error) {
	sa := o.ServiceAccount
	if sa == "" {
		sa = rbac.BootstrapServiceAccount
	}
	if _, err := kube.CoreV1().ServiceAccounts(rbac.BootstrapNamespace).Get(ctx, sa, metav1.GetOptions{}); err != nil {
		return "", Token{}, fmt.Errorf("join token: ServiceAccount %s/%s (created by the hub when it starts): %w", rbac.BootstrapNamespace, sa, err)
	}
	expires := time.Now().Add(o.TTL).UTC().Truncate(time.Second)
	id := randomToken(6)
	s, err := kube.CoreV1().Secrets(rbac.BootstrapNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        JoinTokenSecretPrefix + id,
			Namespace:   rbac.BootstrapNamespace,
			Labels:      map[string]string{JoinTokenLabel: "true", managedByLabel: "flotilla"},
			Annotations: map[string]string{ExpirationAnnotation: expires.Format(time.RFC3339), serviceAccountAnnotation: sa},
		},
		Type: corev1.SecretTypeOpaque,
	}, metav1.CreateOptions{})
	if err != nil {
		return "", Token{}, fmt.Errorf("join token: creating Secret %s/%s%s: %w", rbac.BootstrapNamespace, JoinTokenSecretPrefix, id, err)
	}
	secs := int64(o.TTL / time.Second)
	tr, err := kube.CoreV1().ServiceAccounts(rbac.BootstrapNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &secs,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: s.Name, UID: s.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		_ = kube.CoreV1().Secrets(rbac.BootstrapNamespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
		return "", Token{}, fmt.Errorf("join token: token for ServiceAccount %s/%s: %w", rbac.BootstrapNamespace, sa, err)
	}
	return tr.Status.Token, Token{ID: id, Kind: ServiceAccountToken, Expires: tr.Status.ExpirationTimestamp.UTC(),
		Identity: "system:serviceaccount:" + rbac.BootstrapNamespace + ":" + sa}, nil
}

// serviceAccountAnnotation on a join-token Secret names the ServiceAccount its token is for.
const serviceAccountAnnotation = "flotilla.dev/service-account"

func issueBootstrapToken(ctx context.Context, kube kubernetes.Interface, ttl time.Duration) (string, Token, error) {
	expires := time.Now().Add(ttl).UTC().Truncate(time.Second)
	for attempt := 0; ; attempt++ {
		id, secret := randomToken(6), randomToken(16)
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: TokenSecretPrefix + id, Namespace: TokenSecretNamespace,
				Labels: map[string]string{managedByLabel: "flotilla"}},
			Type: TokenSecretType,
			StringData: map[string]string{
				"description":                    "Flotilla bootstrap token for joining managed clusters",
				"token-id":                       id,
				"token-secret":                   secret,
				"expiration":                     expires.Format(time.RFC3339),
				"usage-bootstrap-authentication": "true",
				"auth-extra-groups":              rbac.BootstrapGroup,
			},
		}
		_, err := kube.CoreV1().Secrets(TokenSecretNamespace).Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && attempt < 3 {
			continue
		}
		if err != nil {
			return "", Token{}, fmt.Errorf("bootstrap token: creating Secret %s/%s: %w", TokenSecretNamespace, s.Name, err)
		}
		return id + "." + secret, Token{ID: id, Kind: BootstrapToken, Expires: expires, Identity: "system:bootstrap:" + id}, nil
	}
}

// tokenSecret is the Secret behind a join token Flotilla issued, with its expiry
// (the zero time when unreadable: such a token is unusable) and its Token.
type tokenSecret struct {
	ns, name string
	expires  time.Time
	token    Token
}

func listTokenSecrets(ctx context.Context, kube kubernetes.Interface) ([]tokenSecret, error) {
	var out []tokenSecret
	sas, err := kube.CoreV1().Secrets(rbac.BootstrapNamespace).List(ctx, metav1.ListOptions{LabelSelector: JoinTokenLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("join tokens: listing Secrets in %s: %w", rbac.BootstrapNamespace, err)
	}
	for _, s := range sas.Items {
		exp, _ := time.Parse(time.RFC3339, s.Annotations[ExpirationAnnotation])
		out = append(out, tokenSecret{ns: s.Namespace, name: s.Name, expires: exp, token: Token{
			ID: strings.TrimPrefix(s.Name, JoinTokenSecretPrefix), Kind: ServiceAccountToken, Expires: exp,
			Identity: "system:serviceaccount:" + rbac.BootstrapNamespace + ":" + s.Annotations[serviceAccountAnnotation]}})
	}
	bts, err := kube.CoreV1().Secrets(TokenSecretNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: managedByLabel + "=flotilla", FieldSelector: "type=" + string(TokenSecretType)})
	if err != nil {
		return nil, fmt.Errorf("join tokens: listing bootstrap token Secrets in %s: %w", TokenSecretNamespace, err)
	}
	for _, s := range bts.Items {
		exp, _ := time.Parse(time.RFC3339, string(s.Data["expiration"]))
		id := string(s.Data["token-id"])
		out = append(out, tokenSecret{ns: s.Namespace, name: s.Name, expires: exp, token: Token{
			ID: id, Kind: BootstrapToken, Expires: exp, Identity: "system:bootstrap:" + id}})
	}
	return out, nil
}

// ListTokens lists the join tokens Flotilla issued that have not expired, soonest expiry
// first. It only reads: the Secrets of expired tokens are deleted by IssueToken and
// RevokeToken (PruneExpiredTokens).
func ListTokens(ctx context.Context, kube kubernetes.Interface) ([]Token, error) {
	secrets, err := listTokenSecrets(ctx, kube)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []Token
	for _, s := range secrets {
		if s.expires.After(now) {
			out = append(out, s.token)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Expires.Equal(out[j].Expires) {
			return out[i].Expires.Before(out[j].Expires)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// PruneExpiredTokens deletes the Secrets of the join tokens that have expired (or whose
// expiry cannot be read, hence unusable) and returns their namespace/names. Their tokens no
// longer authenticate; kube-controller-manager's tokencleaner, which would remove expired
// bootstrap tokens, is off by default, and nothing else removes the ServiceAccount tokens'
// Secrets.
func PruneExpiredTokens(ctx context.Context, kube kubernetes.Interface) ([]string, error) {
	secrets, err := listTokenSecrets(ctx, kube)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var deleted []string
	for _, s := range secrets {
		if s.expires.After(now) {
			continue
		}
		if err := kube.CoreV1().Secrets(s.ns).Delete(ctx, s.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("join tokens: deleting Secret %s/%s of expired token %s: %w", s.ns, s.name, s.token.ID, err)
		}
		deleted = append(deleted, s.ns+"/"+s.name)
	}
	return deleted, nil
}

// RevokeToken deletes the Secret behind the join token id, and the Secrets of expired tokens
// (PruneExpiredTokens). The API server refuses the token within its 10 s token cache TTL
// (e2e/registration). An id that names no token is an error.
func RevokeToken(ctx context.Context, kube kubernetes.Interface, id string) error {
	if id == "" || strings.ContainsAny(id, "./") {
		return fmt.Errorf("revoking join token: %q is not a token id (the first part of a bootstrap token, or the ID column of flotilla token list)", id)
	}
	if _, err := PruneExpiredTokens(ctx, kube); err != nil {
		return fmt.Errorf("revoking join token %s: %w", id, err)
	}
	for _, ref := range []struct{ ns, name string }{
		{rbac.BootstrapNamespace, JoinTokenSecretPrefix + id},
		{TokenSecretNamespace, TokenSecretPrefix + id},
	} {
		err := kube.CoreV1().Secrets(ref.ns).Delete(ctx, ref.name, metav1.DeleteOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("revoking join token %s: deleting Secret %s/%s: %w", id, ref.ns, ref.name, err)
		}
	}
	return fmt.Errorf("revoking join token %s: no such token (flotilla token list shows the live ones)", id)
}
