package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/manifestwork"
)

// servedCertificate is the certificate the server at addr presents.
func servedCertificate(addr net.Addr) *x509.Certificate {
	GinkgoHelper()
	conn, err := tls.Dial("tcp", addr.String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the certificate
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// configuration is the live ValidatingWebhookConfiguration named name.
func configuration(ctx context.Context, name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
}

// bundleOf returns the CA bundle every webhook of the configuration carries, failing if they differ.
func bundleOf(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) []byte {
	GinkgoHelper()
	Expect(cfg.Webhooks).NotTo(BeEmpty())
	for _, w := range cfg.Webhooks[1:] {
		Expect(w.ClientConfig.CABundle).To(Equal(cfg.Webhooks[0].ClientConfig.CABundle))
	}
	return cfg.Webhooks[0].ClientConfig.CABundle
}

func countCerts(bundle []byte) int {
	n := 0
	for rest := bundle; ; n++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return n
		}
	}
}

// admitted checks one round of requests through the ManifestWork webhook: a valid dry-run create is
// admitted and an invalid one is denied by the webhook (so it was called). It returns what went
// wrong, if anything.
func admitted(ctx context.Context) string {
	if _, err := createYAML(ctx, strings.Replace(validWork, "name: valid", "generateName: dry-", 1), true); err != nil {
		return "valid work: " + err.Error()
	}
	_, err := createYAML(ctx, invalidWork, true)
	if err == nil || !strings.Contains(err.Error(), deniedBy) {
		return "invalid work: " + errString(err)
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "admitted"
	}
	return err.Error()
}

var _ = Describe("Serving certificates", func() {
	It("are replaced before expiry, CA included, while requests keep being admitted", func(ctx SpecContext) {
		opts := webhook.Options{
			ConfigurationName: "rotation", SecretName: "rotation-certs",
			// A serving certificate lives 11s (1s backdated) and is replaced with 3.3s left;
			// the CA lives 33s and is replaced with 9.9s left, about 20s in.
			CertLifetime: 10 * time.Second, CALifetime: 30 * time.Second, RenewalFraction: 0.3, ResyncPeriod: 500 * time.Millisecond,
		}
		srv := start(opts, manifestwork.New(manifestwork.Options{}))
		cleanup(srv)

		type seen struct {
			cert  *x509.Certificate
			first time.Time
		}
		var served []seen
		var failures []string
		maxBundle, rounds := 0, 0
		for end := time.Now().Add(34 * time.Second); time.Now().Before(end); rounds++ {
			now := time.Now()
			c := servedCertificate(srv.Addr())
			if n := len(served); n == 0 || !served[n-1].cert.Equal(c) {
				served = append(served, seen{cert: c, first: now})
			}
			if f := admitted(ctx); f != "" {
				failures = append(failures, now.Format("15:04:05.000")+" "+f)
			}
			if cfg, err := configuration(ctx, opts.ConfigurationName); err == nil {
				maxBundle = max(maxBundle, countCerts(bundleOf(cfg)))
			}
			time.Sleep(150 * time.Millisecond)
		}
		Expect(failures).To(BeEmpty(), "requests failed in %d rounds", rounds)

		issuers := map[string]bool{}
		for i, s := range served {
			issuers[s.cert.Issuer.CommonName] = true
			GinkgoWriter.Printf("serving certificate %d: issuer %s, valid %s to %s, first served %s\n", i,
				s.cert.Issuer.CommonName, s.cert.NotBefore.Format("15:04:05"), s.cert.NotAfter.Format("15:04:05"), s.first.Format("15:04:05.000"))
			if i > 0 {
				Expect(s.first).To(BeTemporally("<", served[i-1].cert.NotAfter), "certificate %d replaced only after it expired", i-1)
			}
		}
		Expect(len(served)).To(BeNumerically(">=", 4), "the serving certificate was not rotated repeatedly")
		Expect(issuers).To(HaveLen(2), "the CA was not rotated")
		Expect(maxBundle).To(Equal(2), "the bundle never carried the old and the new CA together")

		By("the expired CA has left the bundle")
		Eventually(func(g Gomega, ctx context.Context) {
			cfg, err := configuration(ctx, opts.ConfigurationName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(countCerts(bundleOf(cfg))).To(Equal(1))
		}).WithContext(ctx).Should(Succeed())
	})

	It("are reused across restarts", func(ctx SpecContext) {
		opts := webhook.Options{ConfigurationName: "restart", SecretName: "restart-certs"}
		first := start(opts, manifestwork.New(manifestwork.Options{}))
		cleanup(first)
		cert := servedCertificate(first.Addr())
		first.stop()

		second := start(opts, manifestwork.New(manifestwork.Options{}))
		cleanup(second)
		Expect(servedCertificate(second.Addr()).Equal(cert)).To(BeTrue(), "a valid certificate was replaced on restart")
		cfg, err := configuration(ctx, opts.ConfigurationName)
		Expect(err).NotTo(HaveOccurred())
		for _, w := range cfg.Webhooks {
			Expect(*w.ClientConfig.URL).To(HavePrefix("https://" + second.Addr().String() + "/"))
		}
		Expect(admitted(ctx)).To(BeEmpty())
	})
})

var _ = Describe("The webhook configuration", Ordered, func() {
	// A resync period far longer than the spec: only watching the objects restores them in time.
	opts := webhook.Options{ConfigurationName: "restore", SecretName: "restore-certs", ResyncPeriod: time.Hour}
	var srv *running
	var want []byte

	BeforeAll(func(ctx SpecContext) {
		srv = start(opts, manifestwork.New(manifestwork.Options{}))
		cleanup(srv)
		cfg, err := configuration(ctx, opts.ConfigurationName)
		Expect(err).NotTo(HaveOccurred())
		want = bundleOf(cfg)
		Expect(want).NotTo(BeEmpty())
		Expect(cfg.Webhooks).To(HaveLen(2)) // the ManifestWork webhook and the server's probe
		for _, w := range cfg.Webhooks {
			Expect(*w.FailurePolicy).To(Equal(admissionregistrationv1.Fail))
			Expect(*w.SideEffects).To(Equal(admissionregistrationv1.SideEffectClassNone))
			Expect(w.AdmissionReviewVersions).To(Equal([]string{"v1"}))
			Expect(*w.TimeoutSeconds).To(BeNumerically("<=", 10))
		}
	})

	restored := func(g Gomega, ctx context.Context) {
		cfg, err := configuration(ctx, opts.ConfigurationName)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Webhooks).To(HaveLen(2))
		for _, w := range cfg.Webhooks {
			g.Expect(w.ClientConfig.CABundle).To(Equal(want))
			g.Expect(*w.ClientConfig.URL).To(HavePrefix("https://" + srv.Addr().String() + "/"))
		}
		g.Expect(admitted(ctx)).To(BeEmpty())
	}

	It("restores a tampered caBundle", func(ctx SpecContext) {
		cfg, err := configuration(ctx, opts.ConfigurationName)
		Expect(err).NotTo(HaveOccurred())
		for i := range cfg.Webhooks {
			cfg.Webhooks[i].ClientConfig.CABundle = hub.CAData // a CA that did not sign the serving certificate
		}
		_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		Expect(err).NotTo(HaveOccurred())
		Eventually(restored).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("restores a deleted configuration", func(ctx SpecContext) {
		Expect(kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, opts.ConfigurationName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(restored).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("restores a webhook removed from it", func(ctx SpecContext) {
		cfg, err := configuration(ctx, opts.ConfigurationName)
		Expect(err).NotTo(HaveOccurred())
		cfg.Webhooks = cfg.Webhooks[:1]
		_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		Expect(err).NotTo(HaveOccurred())
		Eventually(restored).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("regenerates deleted certificates and rolls out the new CA", func(ctx SpecContext) {
		Expect(kube.CoreV1().Secrets(webhook.DefaultNamespace).Delete(ctx, opts.SecretName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			cfg, err := configuration(ctx, opts.ConfigurationName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bytes.Equal(bundleOf(cfg), want)).To(BeFalse())
			secret, err := kube.CoreV1().Secrets(webhook.DefaultNamespace).Get(ctx, opts.SecretName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
			g.Expect(bundleOf(cfg)).To(Equal(secret.Data[webhook.SecretCABundleKey]))
			g.Expect(admitted(ctx)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("adds and removes handlers registered while running", func(ctx SpecContext) {
		// How a later handler (the Rego policies) plugs in: a Validating with its own rules.
		deny := &configMapDenier{}
		Expect(srv.Register(deny)).To(Succeed())
		labelled := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-", Namespace: workNamespace, Labels: map[string]string{"deny": "yes"}}}
		dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		Eventually(func(ctx context.Context) error {
			_, err := kube.CoreV1().ConfigMaps(workNamespace).Create(ctx, labelled, dryRun)
			return err
		}).WithContext(ctx).Should(MatchError(ContainSubstring(`admission webhook "configmaps.test.flotilla.dev" denied the request: labelled deny`)))

		srv.Unregister(deny.Registration().Name)
		Eventually(func(ctx context.Context) error {
			_, err := kube.CoreV1().ConfigMaps(workNamespace).Create(ctx, labelled, dryRun)
			return err
		}).WithContext(ctx).Should(Succeed())
		cfg, err := configuration(ctx, opts.ConfigurationName)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Webhooks).To(HaveLen(2))
	})
})

// configMapDenier denies creating ConfigMaps labelled deny=yes.
type configMapDenier struct{}

func (*configMapDenier) Registration() webhook.Registration {
	return webhook.Registration{
		Name: "configmaps.test.flotilla.dev",
		Path: "/validate/configmaps",
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}},
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"deny": "yes"}},
	}
}

func (*configMapDenier) Handle(_ context.Context, req admission.Request) admission.Response {
	return admission.Denied("labelled deny")
}

var _ = Describe("A Shared handler's rules", func() {
	It("are not applied before it has loaded, and not narrowed until its state is the newest", func(ctx SpecContext) {
		opts := webhook.Options{ConfigurationName: "shared", SecretName: "shared-certs", Logger: logger.WithName("webhook")}
		DeferCleanup(func(ctx SpecContext) {
			err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, opts.ConfigurationName, metav1.DeleteOptions{})
			Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "deleting the configuration: %v", err)
		})
		configMaps := rules("configmaps")
		both := rules("configmaps", "secrets")

		By("another replica, whose state needs both rules, wrote the configuration")
		other := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: opts.ConfigurationName},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: sharedName, Rules: both, ObjectSelector: nothing,
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr("https://127.0.0.1:1/validate/shared")},
				SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		}
		_, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, other, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		written, err := configuration(ctx, opts.ConfigurationName)
		Expect(err).NotTo(HaveOccurred())

		By("a new replica that has not loaded yet syncs its certificates but leaves the configuration alone")
		h := &sharedHandler{loaded: make(chan struct{}), rules: configMaps}
		srv, err := webhook.New(hubConf, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(srv.Register(h)).To(Succeed())
		r := run(srv)
		cleanup(r)
		Eventually(func(ctx context.Context) error {
			_, err := kube.CoreV1().Secrets(webhook.DefaultNamespace).Get(ctx, opts.SecretName, metav1.GetOptions{})
			return err
		}).WithContext(ctx).Should(Succeed(), "the new replica never wrote its certificates")
		// It retries every half second at most: two seconds see several attempts.
		Consistently(func(g Gomega, ctx context.Context) {
			cfg, err := configuration(ctx, opts.ConfigurationName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.ResourceVersion).To(Equal(written.ResourceVersion), "a replica that has not loaded wrote the configuration")
		}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())
		Expect(srv.Ready()).NotTo(BeClosed())

		By("loaded from a state older than the other replica's, it applies its address but keeps the other's rules")
		h.set(configMaps, false)
		close(h.loaded)
		srv.Resync()
		Eventually(srv.Ready()).Should(BeClosed())
		cfg, err := configuration(ctx, opts.ConfigurationName)
		Expect(err).NotTo(HaveOccurred())
		w := sharedWebhook(cfg)
		Expect(*w.ClientConfig.URL).To(HavePrefix("https://" + srv.Addr().String() + "/"))
		Expect(w.Rules).To(ConsistOf(ruleFor("configmaps"), ruleFor("secrets")), "a replica with an older state narrowed the rules")

		By("once its state is the newest, it narrows them to its own")
		h.set(configMaps, true)
		srv.Resync()
		Eventually(func(g Gomega, ctx context.Context) {
			cfg, err := configuration(ctx, opts.ConfigurationName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sharedWebhook(cfg).Rules).To(ConsistOf(ruleFor("configmaps")))
		}).WithContext(ctx).Should(Succeed())
	})
})

const sharedName = "shared.test.flotilla.dev"

// nothing is an object selector no object matches: the API server never calls the webhook.
var nothing = &metav1.LabelSelector{MatchLabels: map[string]string{"test.flotilla.dev/never": "true"}}

// sharedHandler is a Shared handler whose state the spec sets.
type sharedHandler struct {
	loaded  chan struct{}
	mu      sync.Mutex
	rules   []admissionregistrationv1.RuleWithOperations
	current bool
}

func (h *sharedHandler) set(rules []admissionregistrationv1.RuleWithOperations, current bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rules, h.current = rules, current
}

func (h *sharedHandler) Registration() webhook.Registration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return webhook.Registration{Name: sharedName, Path: "/validate/shared", Rules: h.rules, ObjectSelector: nothing}
}

func (h *sharedHandler) Handle(context.Context, admission.Request) admission.Response {
	return admission.Allowed("")
}

func (h *sharedHandler) Loaded() <-chan struct{} { return h.loaded }

func (h *sharedHandler) Current(context.Context) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.current, nil
}

// ruleFor is how the API server returns a CREATE rule for a core resource.
func ruleFor(resource string) admissionregistrationv1.RuleWithOperations {
	return rules(resource)[0]
}

// rules are CREATE rules for core resources, one each.
func rules(resources ...string) []admissionregistrationv1.RuleWithOperations {
	var out []admissionregistrationv1.RuleWithOperations
	for _, r := range resources {
		out = append(out, admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{r}, Scope: ptr(admissionregistrationv1.AllScopes)},
		})
	}
	return out
}

func sharedWebhook(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) admissionregistrationv1.ValidatingWebhook {
	GinkgoHelper()
	for _, w := range cfg.Webhooks {
		if w.Name == sharedName {
			return w
		}
	}
	Fail("no webhook " + sharedName + " in the configuration")
	return admissionregistrationv1.ValidatingWebhook{}
}

func ptr[T any](v T) *T { return &v }
