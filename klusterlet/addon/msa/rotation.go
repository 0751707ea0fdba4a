package msa

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
)

// MinValidity is the shortest spec.rotation.validity accepted: TokenRequest's minimum
// expirationSeconds.
const MinValidity = 10 * time.Minute

// requeueSlack is added to the refresh threshold when the reconciler asks to run again, and
// is the delay when the threshold has already passed (upstream's 5 s).
const requeueSlack = 5 * time.Second

// Threshold is when a token issued at lastRefresh and expiring at expiry is renewed: 80 % into
// its real life. The real expiry counts, not rotation.validity, so that clusters capping token
// lifetimes still rotate in time.
func Threshold(lastRefresh, expiry time.Time) time.Time {
	return lastRefresh.Add(expiry.Sub(lastRefresh) / 5 * 4)
}

// RequeueAfter is how long after now the reconciler looks at a token again: just past its
// threshold, or requeueSlack when that has passed.
func RequeueAfter(now, lastRefresh, expiry time.Time) time.Duration {
	t := Threshold(lastRefresh, expiry)
	if now.After(t) {
		return requeueSlack
	}
	return t.Sub(now) + requeueSlack
}

// validate checks what the agent needs of an MSA before it creates anything.
func validate(msa *authv1beta1.ManagedServiceAccount) error {
	if v := msa.Spec.Rotation.Validity.Duration; v < MinValidity {
		return fmt.Errorf("ManagedServiceAccount %s/%s: spec.rotation.validity %s: must be at least %s (the TokenRequest minimum)",
			msa.Namespace, msa.Name, v, MinValidity)
	}
	return nil
}

// refreshReason says why the token in secret (nil: no Secret) must be issued again without
// asking the API server, or "" when only a TokenReview can tell: the status has no token,
// the Secret is gone or holds another ServiceAccount's token, or the threshold has passed.
func refreshReason(now time.Time, msa *authv1beta1.ManagedServiceAccount, secret *corev1.Secret, saNamespace string) string {
	switch {
	case msa.Status.TokenSecretRef == nil || msa.Status.ExpirationTimestamp == nil:
		return "no token reported yet"
	case secret == nil:
		return "token Secret missing"
	}
	if err := tokenFor(string(secret.Data[authv1beta1.SecretKeyToken]), saNamespace, msa.Name); err != nil {
		return err.Error()
	}
	if now.After(Threshold(msa.Status.TokenSecretRef.LastRefreshTimestamp.Time, msa.Status.ExpirationTimestamp.Time)) {
		return "token past its refresh threshold"
	}
	return ""
}

// tokenFor checks that token is a JWT of ServiceAccount namespace/name (its sub claim). It
// does not verify the signature: the TokenReview does that.
func tokenFor(token, namespace, name string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("token payload: %w", err)
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return fmt.Errorf("token claims: %w", err)
	}
	if want := "system:serviceaccount:" + namespace + ":" + name; claims.Sub != want {
		return fmt.Errorf("token is for %q, not %q", claims.Sub, want)
	}
	return nil
}
