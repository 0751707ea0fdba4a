package addon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/backoff"
	"github.com/flotilla-dev/flotilla/core/hash"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// Keys of an add-on's client certificate Secret, as OCM writes them.
const (
	TLSCertKey     = "tls.crt"
	TLSKeyKey      = "tls.key"
	KubeconfigKey  = "kubeconfig"
	ClusterNameKey = "cluster-name"
)

// Names in the kubeconfig of an add-on's hub kubeconfig Secret, as OCM writes them. The
// credentials are the files tls.crt and tls.key next to it (the Secret mounted as a
// directory), so a renewed certificate is picked up without a new kubeconfig.
const (
	KubeconfigContext = "default-context"
	KubeconfigAuth    = "default-auth"
	KubeconfigCluster = "hub"
)

// Labels of the Secrets the agent writes, so that it finds them again when their add-on
// went while the klusterlet was down (Agent.Run collects them) and flotilla unjoin removes
// them with the klusterlet.
const (
	// SecretAddOnLabel names the add-on (OCM's label of add-on CSRs).
	SecretAddOnLabel = addonv1alpha1.AddonLabelKey
	// SecretKlusterletLabel is the agent namespace of the klusterlet that wrote the Secret:
	// klusterlets of several hubs on one cluster each keep to their own.
	SecretKlusterletLabel = "addon.flotilla.dev/klusterlet-namespace"
)

// SecretName is the Secret holding add-on addon's client certificate for signer:
// <addon>-hub-kubeconfig for kubernetes.io/kube-apiserver-client, else
// <addon>-<signer with / replaced by ->-client-cert.
func SecretName(addon, signer string) string {
	if signer == certificatesv1.KubeAPIServerClientSignerName {
		return addon + "-hub-kubeconfig"
	}
	return addon + "-" + strings.ReplaceAll(signer, "/", "-") + "-client-cert"
}

// DefaultUser is the common name of an add-on agent whose registration names no user (OCM's
// registration agent default, with the klusterlet's agent name).
func DefaultUser(cluster, addon, agent string) string {
	return "system:open-cluster-management:cluster:" + cluster + ":addon:" + addon + ":agent:" + agent
}

// DefaultGroup is the organization of a kube-apiserver-client certificate whose registration
// names no groups.
func DefaultGroup(cluster, addon string) string {
	return "system:open-cluster-management:cluster:" + cluster + ":addon:" + addon
}

// regConfig is one registration of one add-on, as served: its key changes with anything
// that calls for another certificate or another Secret.
type regConfig struct {
	addon, cluster string
	// agentNamespace is the klusterlet's (SecretKlusterletLabel).
	agentNamespace string
	// hosted puts the Secret on the management cluster (Hosted).
	hosted                bool
	key                   string
	namespace, secretName string
	signer                string
	subject               pkix.Name
	expirationSeconds     int32
	// kubeconfig is the hub kubeconfig written with a kube-apiserver-client certificate.
	kubeconfig []byte
}

func newRegConfig(cfg Config, mca *addonv1alpha1.ManagedClusterAddOn, reg addonv1alpha1.RegistrationConfig) *regConfig {
	c := &regConfig{
		addon: mca.Name, cluster: cfg.ClusterName, agentNamespace: cfg.AgentNamespace, namespace: InstallNamespace(mca), hosted: Hosted(mca),
		signer: reg.SignerName, secretName: SecretName(mca.Name, reg.SignerName), expirationSeconds: cfg.CSRExpirationSeconds,
		subject: pkix.Name{
			CommonName:         reg.Subject.User,
			Organization:       slices.Clone(reg.Subject.Groups),
			OrganizationalUnit: slices.Clone(reg.Subject.OrganizationUnits),
		},
	}
	if c.subject.CommonName == "" {
		c.subject.CommonName = DefaultUser(cfg.ClusterName, mca.Name, cfg.AgentName)
	}
	if c.signer == certificatesv1.KubeAPIServerClientSignerName {
		if len(c.subject.Organization) == 0 {
			c.subject.Organization = []string{DefaultGroup(cfg.ClusterName, mca.Name)}
		}
		c.kubeconfig = hubKubeconfig(cfg.HubEndpoint)
	}
	c.key = hash.MustJSON([]any{c.namespace, c.signer, c.subject.CommonName, c.subject.Organization, c.subject.OrganizationalUnit, c.hosted})
	return c
}

// hubKubeconfig is the kubeconfig of an add-on's hub kubeconfig Secret: the hub as the
// bootstrap kubeconfig describes it (server, CA bundle, TLS server name, proxy URL) and the
// Secret's tls.crt and tls.key as client credentials.
func hubKubeconfig(ep registration.HubEndpoint) []byte {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigCluster] = &clientcmdapi.Cluster{
		Server:                   ep.Server,
		CertificateAuthorityData: ep.CAData,
		TLSServerName:            ep.TLSServerName,
		ProxyURL:                 ep.ProxyURL,
		InsecureSkipTLSVerify:    ep.Insecure,
	}
	cfg.AuthInfos[KubeconfigAuth] = &clientcmdapi.AuthInfo{ClientCertificate: TLSCertKey, ClientKey: TLSKeyKey}
	cfg.Contexts[KubeconfigContext] = &clientcmdapi.Context{Cluster: KubeconfigCluster, AuthInfo: KubeconfigAuth, Namespace: "configuration"}
	cfg.CurrentContext = KubeconfigContext
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		// A config of strings and bytes always encodes.
		panic(fmt.Sprintf("encoding add-on hub kubeconfig: %v", err))
	}
	return data
}

func (c *regConfig) ref() string {
	return "secret " + c.namespace + "/" + c.secretName + " on the " + clusterName(c.hosted)
}

// data is what the Secret must hold besides the certificate and key.
func (c *regConfig) data() map[string][]byte {
	d := map[string][]byte{ClusterNameKey: []byte(c.cluster)}
	if c.kubeconfig != nil {
		d[KubeconfigKey] = c.kubeconfig
	}
	return d
}

// labels are the Secret's labels.
func (c *regConfig) labels() map[string]string {
	return map[string]string{SecretAddOnLabel: c.addon, SecretKlusterletLabel: c.agentNamespace}
}

// matches reports whether cert was issued for c's subject.
func (c *regConfig) matches(cert *x509.Certificate) bool {
	return cert.Subject.CommonName == c.subject.CommonName &&
		sameSet(cert.Subject.Organization, c.subject.Organization) &&
		sameSet(cert.Subject.OrganizationalUnit, c.subject.OrganizationalUnit)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// certLoop keeps c's Secret holding a valid certificate for c: it requests one when there is
// none (or it is for another subject, or expired), renews it once only RotationThreshold (plus
// up to a quarter more, drawn once per certificate) of its lifetime is left, and puts back
// the cluster name and kubeconfig. It wakes on changes of the Secret and at the rotation time.
func (a *Agent) certLoop(ctx context.Context, c *regConfig) {
	log := a.log.WithValues("addon", c.addon, "signer", c.signer, "secret", c.namespace+"/"+c.secretName, "hosted", c.hosted)
	kube := a.kube(c.hosted)
	changed := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: toolscache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "secrets", c.namespace,
			fields.OneTermEqualSelector("metadata.name", c.secretName)),
		ObjectType: &corev1.Secret{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }, DeleteFunc: notify,
		},
	})
	go informer.RunWithContext(ctx)

	b := a.cfg.backoff()
	var (
		rotateFor string // the certificate rotateAt was drawn for
		rotateAt  time.Time
	)
	for ctx.Err() == nil {
		sec, err := kube.CoreV1().Secrets(c.namespace).Get(ctx, c.secretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			sec, err = nil, nil
		}
		if err != nil {
			log.Info("Reading the add-on's client certificate secret failed; retrying", "error", err.Error())
			if !backoff.Sleep(ctx, a.cfg.Clock, b.Next()) {
				return
			}
			continue
		}
		now := a.cfg.Clock.Now()
		if creds := c.current(sec); creds != nil && creds.ValidAt(now) {
			id := creds.Leaf.SerialNumber.String() + "/" + creds.Leaf.NotAfter.String()
			if id != rotateFor {
				rotateFor = id
				rotateAt = registration.RotationTime(creds.Leaf.NotBefore, creds.Leaf.NotAfter,
					registration.JitteredThreshold(a.cfg.RotationThreshold, rand.Float64()))
			}
			if now.Before(rotateAt) {
				if err := c.writeSecret(ctx, kube, sec, nil); err != nil {
					log.Info("Updating the add-on's client certificate secret failed; retrying", "error", err.Error())
					if !backoff.Sleep(ctx, a.cfg.Clock, b.Next()) {
						return
					}
					continue
				}
				b.Reset()
				t := a.cfg.Clock.NewTimer(rotateAt.Sub(now))
				select {
				case <-ctx.Done():
				case <-changed:
				case <-t.C():
				}
				t.Stop()
				continue
			}
			log.Info("Add-on client certificate reached its rotation threshold; requesting a new one", "notAfter", creds.Leaf.NotAfter)
		}
		creds, err := a.requestCertificate(ctx, c, log)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Info("Add-on client certificate request failed; retrying with a new key", "error", err.Error())
			if !backoff.Sleep(ctx, a.cfg.Clock, b.Next()) {
				return
			}
			continue
		}
		// Store it, waiting for the install namespace if the add-on's manifests have not
		// created it yet.
		for ctx.Err() == nil {
			sec, err := kube.CoreV1().Secrets(c.namespace).Get(ctx, c.secretName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				sec, err = nil, nil
			}
			if err == nil {
				err = c.writeSecret(ctx, kube, sec, creds)
			}
			if err == nil {
				log.Info("Add-on client certificate stored", "subject", creds.Leaf.Subject.String(), "notAfter", creds.Leaf.NotAfter)
				b.Reset()
				break
			}
			log.Info("Storing the add-on's client certificate failed; retrying", "error", err.Error())
			if !backoff.Sleep(ctx, a.cfg.Clock, b.Next()) {
				return
			}
		}
	}
}

// current returns the certificate in sec if it is for c, or nil.
func (c *regConfig) current(sec *corev1.Secret) *registration.Credentials {
	if sec == nil || len(sec.Data[TLSCertKey]) == 0 || len(sec.Data[TLSKeyKey]) == 0 {
		return nil
	}
	creds, err := registration.ParseCredentials(sec.Data[TLSCertKey], sec.Data[TLSKeyKey])
	if err != nil || !c.matches(creds.Leaf) {
		return nil
	}
	return creds
}

// requestCertificate files a CSR for c with a new key and waits for its certificate.
func (a *Agent) requestCertificate(ctx context.Context, c *regConfig, log interface{ Info(string, ...any) }) (*registration.Credentials, error) {
	key, err := registration.NewPrivateKey()
	if err != nil {
		return nil, err
	}
	spec := registration.CertificateSpec{
		Subject:    c.subject,
		DNSNames:   []string{c.addon + ".addon.open-cluster-management.io"},
		SignerName: c.signer,
		Labels: map[string]string{
			clusterv1.ClusterNameLabelKey: c.cluster,
			addonv1alpha1.AddonLabelKey:   c.addon,
		},
		// OCM's add-on managers only look at CSRs whose name starts with "addon".
		NamePrefix:        "addon-" + c.cluster + "-" + c.addon,
		ExpirationSeconds: c.expirationSeconds,
	}
	obj, err := spec.Request(key)
	if err != nil {
		return nil, fmt.Errorf("add-on %s: %w", c.addon, err)
	}
	w := registration.CSRWaiter{
		CSRs: a.hubKube.CertificatesV1().CertificateSigningRequests(), Backoff: a.cfg.backoff(), Clock: a.cfg.Clock,
		Log: a.log.WithValues("addon", c.addon),
	}
	certPEM, err := w.Wait(ctx, obj)
	if err != nil {
		return nil, err
	}
	if _, err := tls.X509KeyPair(certPEM, key); err != nil {
		return nil, fmt.Errorf("%w: certificate of CSR %s does not match its private key: %w", registration.ErrCSRRejected, obj.Name, err)
	}
	creds, err := registration.ParseCredentials(certPEM, key)
	if err != nil {
		return nil, fmt.Errorf("%w: CSR %s: %w", registration.ErrCSRRejected, obj.Name, err)
	}
	if !c.matches(creds.Leaf) {
		return nil, fmt.Errorf("%w: CSR %s was signed for %q, not %q", registration.ErrCSRRejected, obj.Name, creds.Leaf.Subject.String(), c.subject.String())
	}
	return creds, nil
}

// writeSecret makes sec (nil: not there yet) hold c's data and labels and, when creds is
// set, that certificate and key; keys and labels written by others stay. It writes nothing
// when nothing changes. An update is guarded by the resourceVersion read.
func (c *regConfig) writeSecret(ctx context.Context, kube kubernetes.Interface, sec *corev1.Secret, creds *registration.Credentials) error {
	want := c.data()
	if creds != nil {
		want[TLSCertKey], want[TLSKeyKey] = creds.CertPEM, creds.KeyPEM
	}
	if sec == nil {
		if creds == nil {
			return nil
		}
		_, err := kube.CoreV1().Secrets(c.namespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.secretName, Labels: c.labels()},
			Type:       corev1.SecretTypeOpaque,
			Data:       want,
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating %s: %w", c.ref(), err)
		}
		return nil
	}
	sec = sec.DeepCopy()
	if sec.Data == nil {
		sec.Data = map[string][]byte{}
	}
	changed := false
	for k, v := range want {
		if string(sec.Data[k]) != string(v) {
			sec.Data[k], changed = v, true
		}
	}
	// A Secret written before the labels existed gets them too.
	for k, v := range c.labels() {
		if sec.Labels[k] != v {
			if sec.Labels == nil {
				sec.Labels = map[string]string{}
			}
			sec.Labels[k], changed = v, true
		}
	}
	if !changed {
		return nil
	}
	if _, err := kube.CoreV1().Secrets(c.namespace).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating %s: %w", c.ref(), err)
	}
	return nil
}

func deleteSecret(ctx context.Context, kube kubernetes.Interface, ns, name string, hosted bool) error {
	err := kube.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting secret %s/%s on the %s: %w", ns, name, clusterName(hosted), err)
	}
	return nil
}
