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
// the Secret is gone or holds a token of another ServiceAccount or of an earlier one of the
// same name (sa, as it is now: the token names its uid), or the threshold has passed.
func refreshReason(now time.Time, msa *authv1beta1.ManagedServiceAccount, secret *corev1.Secret, sa *corev1.ServiceAccount) string {
	switch {
	case msa.Status.TokenSecretRef == nil || msa.Status.ExpirationTimestamp == nil:
		return "no token reported yet"
	case secret == nil:
		return "token Secret missing"
	}
	if err := tokenFor(string(secret.Data[authv1beta1.SecretKeyToken]), sa); err != nil {
		return err.Error()
	}
	if now.After(Threshold(msa.Status.TokenSecretRef.LastRefreshTimestamp.Time, msa.Status.ExpirationTimestamp.Time)) {
		return "token past its refresh threshold"
	}
	return ""
}

// tokenFor checks that token is a JWT of ServiceAccount sa: its sub claim, and its
// ServiceAccount uid claim when it has one (a ServiceAccount deleted and created again has
// another uid, and its old tokens stop authenticating; the API server's TokenReview may
// still accept them for a moment). It does not verify the signature: the TokenReview does.
func tokenFor(token string, sa *corev1.ServiceAccount) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("token payload: %w", err)
	}
	var claims struct {
		Sub        string `json:"sub"`
		Kubernetes struct {
			ServiceAccount struct {
				UID string `json:"uid"`
			} `json:"serviceaccount"`
		} `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return fmt.Errorf("token claims: %w", err)
	}
	if want := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name; claims.Sub != want {
		return fmt.Errorf("token is for %q, not %q", claims.Sub, want)
	}
	if uid := claims.Kubernetes.ServiceAccount.UID; uid != "" && uid != string(sa.UID) {
		return fmt.Errorf("token is for an earlier ServiceAccount %s/%s (uid %s, now %s)", sa.Namespace, sa.Name, uid, sa.UID)
	}
	return nil
}
