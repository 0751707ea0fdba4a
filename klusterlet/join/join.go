// Package join installs a klusterlet on a managed cluster for one hub and removes it again:
// what `flotilla join` and `flotilla unjoin` do. The klusterlet's manifests come from the
// Helm chart charts/flotilla-klusterlet (core/install), the one source the chart's users
// and the CLI share.
//
// Several klusterlets, one per hub, can run on one cluster (seeds: "Manage a cluster with
// multiple hubs"): each has its own Klusterlet name and agent namespace, and every
// cluster-scoped object of the chart carries the Klusterlet name.
package join

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/core/kubeconfig"
)

// DefaultKlusterletName is the Klusterlet of a cluster's first hub, as in OCM.
const DefaultKlusterletName = "klusterlet"

// Options describe a join.
type Options struct {
	// HubAPIServer is the hub API server URL the agent reaches, HubCA its CA bundle (PEM).
	HubAPIServer string
	HubCA        []byte
	// Token is the bootstrap token from `flotilla get token`.
	Token string
	// ClusterName names the ManagedCluster on the hub.
	ClusterName string
	// KlusterletName and AgentNamespace tell klusterlets for different hubs apart; defaults
	// DefaultKlusterletName and install.AgentNamespace.
	KlusterletName, AgentNamespace string
	// ProxyURL is an HTTP(S) proxy between the agent and the hub (HTTP CONNECT); ProxyCA is
	// an HTTPS proxy's CA, appended to the kubeconfig's CA data as OCM does.
	ProxyURL string
	ProxyCA  []byte
	// Values override the klusterlet chart's values (image, resources, flags, ...).
	Values map[string]any
}

func (o *Options) defaults() {
	if o.KlusterletName == "" {
		o.KlusterletName = DefaultKlusterletName
	}
	if o.AgentNamespace == "" {
		o.AgentNamespace = install.AgentNamespace
	}
}

// Validate checks the options a user typed, naming the flag at fault.
func (o *Options) Validate() error {
	o.defaults()
	var errs []error
	if o.ClusterName == "" {
		errs = append(errs, errors.New("--cluster-name is required"))
	} else if msgs := validation.IsDNS1123Label(o.ClusterName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--cluster-name %q: %s", o.ClusterName, strings.Join(msgs, "; ")))
	}
	if o.Token == "" {
		errs = append(errs, errors.New("--hub-token is required (flotilla get token on the hub prints it)"))
	}
	if u, err := url.Parse(o.HubAPIServer); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("--hub-apiserver %q must be an https:// URL", o.HubAPIServer))
	}
	if len(o.HubCA) == 0 {
		errs = append(errs, errors.New("the hub's CA is required (--hub-ca-data or --ca-file)"))
	}
	if o.ProxyURL != "" {
		if u, err := url.Parse(o.ProxyURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--proxy-url %q must be an http:// or https:// URL", o.ProxyURL))
		}
	} else if len(o.ProxyCA) > 0 {
		errs = append(errs, errors.New("--proxy-ca-file needs --proxy-url"))
	}
	for _, n := range []struct{ flag, v string }{{"--klusterlet-name", o.KlusterletName}, {"--agent-namespace", o.AgentNamespace}} {
		if msgs := validation.IsDNS1123Label(n.v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", n.flag, n.v, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}

// BootstrapKubeconfig is the kubeconfig the agent registers with: the token, the hub's CA
// (and the proxy's) and the proxy URL.
func (o *Options) BootstrapKubeconfig() ([]byte, error) {
	ca := append([]byte{}, o.HubCA...)
	if len(o.ProxyCA) > 0 {
		if len(ca) > 0 && ca[len(ca)-1] != '\n' {
			ca = append(ca, '\n')
		}
		ca = append(ca, o.ProxyCA...)
	}
	return kubeconfig.Bootstrap(kubeconfig.Params{Server: o.HubAPIServer, CA: ca, Token: o.Token, ProxyURL: o.ProxyURL})
}

// Preflight checks that the hub takes the bootstrap kubeconfig (reachable, trusted, the token
// valid) before anything is installed: an expired or revoked token fails here, not in the
// agent's log later.
func Preflight(ctx context.Context, bootstrapKubeconfig []byte) error {
	kube, err := bootstrapClient(bootstrapKubeconfig)
	if err != nil {
		return err
	}
	r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the hub refused the bootstrap token: it has expired or was revoked; run `flotilla get token` on the hub for a new join command")
	case err != nil:
		return fmt.Errorf("reaching the hub with the bootstrap kubeconfig: %w", err)
	}
	// An identity the hub knows but that may not register is refused here too.
	if _, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{Limit: 1}); apierrors.IsForbidden(err) {
		return fmt.Errorf("the hub authenticates the token as %s, which may not register clusters (listing CSRs is forbidden): use a token from `flotilla get token`", r.Status.UserInfo.Username)
	} else if err != nil {
		return fmt.Errorf("checking the bootstrap identity's rights on the hub: %w", err)
	}
	return nil
}

func bootstrapClient(kubeconfig []byte) (kubernetes.Interface, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	cfg.Timeout = 30 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	return kube, nil
}

// WaitForCSR waits until the cluster's agent has filed its registration CSR on the hub (seen
// with the bootstrap identity, which may list CSRs), reporting progress.
func WaitForCSR(ctx context.Context, bootstrapKubeconfig []byte, cluster string, progress func(string)) (string, error) {
	kube, err := bootstrapClient(bootstrapKubeconfig)
	if err != nil {
		return "", err
	}
	sel := metav1.ListOptions{LabelSelector: "open-cluster-management.io/cluster-name=" + cluster}
	progress(fmt.Sprintf("waiting for the agent of cluster %s to request its certificate on the hub", cluster))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		l, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, sel)
		if err == nil {
			for _, c := range l.Items {
				if c.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName {
					return c.Name, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return "", fmt.Errorf("waiting for the CSR of cluster %s: %w (last error: %v)", cluster, ctx.Err(), err)
			}
			return "", fmt.Errorf("waiting for the CSR of cluster %s: %w: is the agent running? (kubectl -n <agent namespace> logs deploy/<klusterlet>-agent)", cluster, ctx.Err())
		case <-tick.C:
		}
	}
}

// DecodeCA accepts a CA as PEM or as base64 of PEM (the form `flotilla get token` prints).
func DecodeCA(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-----BEGIN") {
		return []byte(s + "\n"), nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || !strings.Contains(string(b), "-----BEGIN CERTIFICATE-----") {
		return nil, fmt.Errorf("--hub-ca-data: neither a PEM certificate nor base64 of one")
	}
	return b, nil
}
