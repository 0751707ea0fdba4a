package msa

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// The threshold is 80 % into the token's real life, whatever validity asked for: a cluster
// that caps tokens at a day still rotates after 19.2 hours.
func TestThresholdIsFourFifthsOfTheRealLife(t *testing.T) {
	for _, c := range []struct {
		life time.Duration
		want time.Duration
	}{
		{10 * time.Minute, 8 * time.Minute},
		{24 * time.Hour, 19*time.Hour + 12*time.Minute},
		{8640 * time.Hour, 6912 * time.Hour},
	} {
		if got := Threshold(t0, t0.Add(c.life)).Sub(t0); got != c.want {
			t.Errorf("life %s: threshold after %s, want %s", c.life, got, c.want)
		}
	}
}

// The reconciler comes back 5 s after the threshold, or in 5 s once it has passed; a fake
// clock walks through a 10-minute token's life.
func TestRequeueAfterFollowsTheClock(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0)
	expiry := t0.Add(10 * time.Minute)
	for _, c := range []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 8*time.Minute + 5*time.Second},
		{time.Minute, 7*time.Minute + 5*time.Second},
		{8 * time.Minute, 5 * time.Second},
		{8*time.Minute + time.Second, 5 * time.Second},
		{20 * time.Minute, 5 * time.Second},
	} {
		clk.SetTime(t0.Add(c.at))
		if got := RequeueAfter(clk.Now(), t0, expiry); got != c.want {
			t.Errorf("at +%s: requeue after %s, want %s", c.at, got, c.want)
		}
	}
}

func jwt(sub, uid string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"sub":"`+sub+`","kubernetes.io":{"serviceaccount":{"name":"x","uid":"`+uid+`"}}}`)) + ".sig"
}

// A token is issued again without asking the API server when the status has none, the
// Secret is gone or holds another ServiceAccount's token, or the threshold passed;
// otherwise only a TokenReview can tell ("").
func TestRefreshReason(t *testing.T) {
	const ns = "open-cluster-management-managed-serviceaccount"
	reported := func() *authv1beta1.ManagedServiceAccount {
		exp := metav1.NewTime(t0.Add(10 * time.Minute))
		return &authv1beta1.ManagedServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "my-sa"},
			Status: authv1beta1.ManagedServiceAccountStatus{ExpirationTimestamp: &exp,
				TokenSecretRef: &authv1beta1.SecretRef{Name: "my-sa", LastRefreshTimestamp: metav1.NewTime(t0)}},
		}
	}
	secret := func(token string) *corev1.Secret {
		return &corev1.Secret{Data: map[string][]byte{authv1beta1.SecretKeyToken: []byte(token)}}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-sa", UID: "uid-2"}}
	good := secret(jwt("system:serviceaccount:"+ns+":my-sa", "uid-2"))
	for _, c := range []struct {
		name   string
		msa    func() *authv1beta1.ManagedServiceAccount
		secret *corev1.Secret
		at     time.Duration
		want   string
	}{
		{"current", reported, good, time.Minute, ""},
		{"at the threshold", reported, good, 8 * time.Minute, ""},
		{"past the threshold", reported, good, 8*time.Minute + time.Second, "threshold"},
		{"nothing reported", func() *authv1beta1.ManagedServiceAccount {
			m := reported()
			m.Status = authv1beta1.ManagedServiceAccountStatus{}
			return m
		}, good, 0, "no token reported"},
		{"no expiry reported", func() *authv1beta1.ManagedServiceAccount {
			m := reported()
			m.Status.ExpirationTimestamp = nil
			return m
		}, good, 0, "no token reported"},
		{"Secret gone", reported, nil, 0, "Secret missing"},
		{"another ServiceAccount's token", reported, secret(jwt("system:serviceaccount:"+ns+":other", "uid-2")), 0, `not "system:serviceaccount:` + ns + `:my-sa"`},
		{"an earlier ServiceAccount's token", reported, secret(jwt("system:serviceaccount:"+ns+":my-sa", "uid-1")), 0, "earlier ServiceAccount " + ns + "/my-sa (uid uid-1, now uid-2)"},
		{"a token without uid", reported, secret(jwt("system:serviceaccount:"+ns+":my-sa", "")), time.Minute, ""},
		{"not a JWT", reported, secret("opaque"), 0, "not a JWT"},
	} {
		got := refreshReason(t0.Add(c.at), c.msa(), c.secret, sa)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: reason %q, want one containing %q", c.name, got, c.want)
		}
	}
}

// A validity under TokenRequest's minimum is refused with a message naming the object and
// the field.
func TestValidateNamesObjectAndField(t *testing.T) {
	m := &authv1beta1.ManagedServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "x"},
		Spec: authv1beta1.ManagedServiceAccountSpec{Rotation: authv1beta1.ManagedServiceAccountRotation{Validity: metav1.Duration{Duration: 5 * time.Minute}}}}
	err := validate(m)
	want := "ManagedServiceAccount cluster1/x: spec.rotation.validity 5m0s: must be at least 10m0s (the TokenRequest minimum)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	m.Spec.Rotation.Validity.Duration = 10 * time.Minute
	if err := validate(m); err != nil {
		t.Errorf("10m: %v", err)
	}
}
