package registration

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/core/backoff"
)

// rotationLoop renews the client certificate once only RotationThreshold, plus up to a
// quarter more drawn once per certificate (20% to 25% by default), of its lifetime
// remains: a new key, a new CSR with the same identity created with the
// current (not the bootstrap) credentials, a new secret, and then the switch.
// If the certificate expires before a new one is issued the session ends and
// the bootstrap flow takes over.
func (s *session) rotationLoop(ctx context.Context) {
	cfg := s.a.cfg
	b := s.a.backoff()
	for ctx.Err() == nil {
		leaf := s.conn.Credentials().Leaf
		at := s.a.rotation.At(leaf)
		if d := at.Sub(cfg.Clock.Now()); d > 0 {
			if !backoff.Sleep(ctx, cfg.Clock, d) {
				return
			}
		}
		s.a.log.Info("Client certificate reached its rotation threshold; requesting a new one",
			"cluster", s.id.ClusterName, "agent", s.id.AgentName, "rotationTime", at, "notAfter", leaf.NotAfter)
		_, err := s.rotate(ctx, leaf.NotAfter)
		if err == nil {
			b.Reset()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if !cfg.Clock.Now().Before(leaf.NotAfter) {
			s.finish(fmt.Sprintf("client certificate of %s expired at %s before a renewed one was issued: %v",
				s.id.CommonName(), leaf.NotAfter.Format(time.RFC3339), err), true)
			return
		}
		s.a.recordError(fmt.Errorf("rotating client certificate of %s: %w", s.id.CommonName(), err))
		if !backoff.Sleep(ctx, cfg.Clock, b.Next()) {
			return
		}
	}
}

// rotate obtains and installs a renewed certificate; it gives up at expiry.
func (s *session) rotate(ctx context.Context, expiry time.Time) (*Credentials, error) {
	ctx, cancel := context.WithDeadline(ctx, expiry)
	defer cancel()
	a := s.a
	sec, err := ReadHubSecret(ctx, a.management.CoreV1(), a.cfg.AgentNamespace, a.cfg.HubKubeconfigSecret)
	if err != nil {
		return nil, err
	}
	if !sec.Exists() {
		return nil, errors.New(sec.ref() + " is gone; a new bootstrap will follow")
	}
	creds, err := a.requestCertificate(ctx, s.hubKube, sec, s.id)
	if err != nil {
		return nil, err
	}
	// Store first: if the agent dies right after, it restarts with the new
	// certificate rather than the old one.
	b := a.backoff()
	for {
		err := a.storeCredentials(ctx, sec, s.conn.Endpoint(), creds)
		if err == nil {
			break
		}
		a.recordError(err)
		if !backoff.Sleep(ctx, a.cfg.Clock, b.Next()) {
			return nil, ctx.Err()
		}
		// Re-read so that a conflicting write does not block us forever.
		fresh, rerr := ReadHubSecret(ctx, a.management.CoreV1(), a.cfg.AgentNamespace, a.cfg.HubKubeconfigSecret)
		if rerr == nil {
			sec = fresh
		}
	}
	if err := s.conn.SetCredentials(creds); err != nil {
		return nil, err
	}
	leaf := creds.Leaf
	s.rotatedCondition.Store(&metav1.Condition{
		Type:    ConditionClusterCertificateRotated,
		Status:  metav1.ConditionTrue,
		Reason:  ReasonClientCertificateUpdated,
		Message: fmt.Sprintf("client certificate rotated starting from %s to %s", leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339)),
	})
	s.statusWake.notify()
	a.update(func(st *State) { st.CertificateNotAfter = leaf.NotAfter; st.Rotations++ })
	a.log.Info("Client certificate rotated", "cluster", s.id.ClusterName, "agent", s.id.AgentName,
		"notBefore", leaf.NotBefore, "notAfter", leaf.NotAfter)
	return creds, nil
}
