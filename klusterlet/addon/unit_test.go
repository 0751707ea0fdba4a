package addon

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

func TestNames(t *testing.T) {
	if got := SecretName("hello", "kubernetes.io/kube-apiserver-client"); got != "hello-hub-kubeconfig" {
		t.Errorf("kube client secret %q", got)
	}
	if got := SecretName("hello", "example.com/signer"); got != "hello-example.com-signer-client-cert" {
		t.Errorf("custom signer secret %q", got)
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if got := InstallNamespace(mca); got != DefaultInstallNamespace {
		t.Errorf("default namespace %q", got)
	}
	mca.Spec.InstallNamespace = "spec-ns"
	if got := InstallNamespace(mca); got != "spec-ns" {
		t.Errorf("spec namespace %q", got)
	}
	mca.Status.Namespace = "status-ns"
	if got := InstallNamespace(mca); got != "status-ns" {
		t.Errorf("status namespace %q", got)
	}
}

func TestRegConfig(t *testing.T) {
	cfg := Config{ClusterName: "c1", AgentName: "a1", HubEndpoint: registration.HubEndpoint{Server: "https://hub:6443", CAData: []byte("ca"), ProxyURL: "http://proxy:3128"}}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}
	kc := newRegConfig(cfg, mca, addonv1alpha1.RegistrationConfig{SignerName: "kubernetes.io/kube-apiserver-client"})
	if kc.subject.CommonName != "system:open-cluster-management:cluster:c1:addon:hello:agent:a1" ||
		len(kc.subject.Organization) != 1 || kc.subject.Organization[0] != "system:open-cluster-management:cluster:c1:addon:hello" {
		t.Errorf("default kube client subject %+v", kc.subject)
	}
	k, err := clientcmd.Load(kc.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cluster := k.Clusters[k.Contexts[k.CurrentContext].Cluster]
	if cluster.Server != "https://hub:6443" || cluster.ProxyURL != "http://proxy:3128" || string(cluster.CertificateAuthorityData) != "ca" {
		t.Errorf("kubeconfig cluster %+v", cluster)
	}
	if a := k.AuthInfos[k.Contexts[k.CurrentContext].AuthInfo]; a.ClientCertificate != "tls.crt" || a.ClientKey != "tls.key" {
		t.Errorf("kubeconfig credentials %+v", a)
	}
	custom := newRegConfig(cfg, mca, addonv1alpha1.RegistrationConfig{SignerName: "example.com/s", Subject: addonv1alpha1.Subject{User: "u"}})
	if custom.kubeconfig != nil || len(custom.subject.Organization) != 0 || custom.subject.CommonName != "u" {
		t.Errorf("custom signer config %+v", custom)
	}
	if _, ok := custom.data()[KubeconfigKey]; ok {
		t.Errorf("custom signer secret with a kubeconfig")
	}
	mca.Status.Namespace = "other"
	if moved := newRegConfig(cfg, mca, addonv1alpha1.RegistrationConfig{SignerName: "kubernetes.io/kube-apiserver-client"}); moved.key == kc.key {
		t.Errorf("a new install namespace must be a new registration")
	}
}

type nopAgent struct{}

func (nopAgent) Run(context.Context, BuiltinEnv) error { return nil }

// A built-in agent runs for a labelled add-on whose namespace the hub decided, unless it is
// being deleted or is a template add-on (AddOnTemplate or Wasm template), or none is configured.
func TestBuiltinWanted(t *testing.T) {
	a := &Agent{cfg: Config{Builtins: map[string]BuiltinAgent{"managed-serviceaccount": nopAgent{}}}}
	served := func() *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "managed-serviceaccount", Labels: map[string]string{BuiltinLabel: "true"}},
			Status:     addonv1alpha1.ManagedClusterAddOnStatus{Namespace: "open-cluster-management-managed-serviceaccount"},
		}
	}
	templated := func(group, resource string) func(*addonv1alpha1.ManagedClusterAddOn) {
		return func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.ConfigReferences = append(m.Status.ConfigReferences, addonv1alpha1.ConfigReference{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: group, Resource: resource}})
		}
	}
	now := metav1.Now()
	for _, c := range []struct {
		name string
		edit func(*addonv1alpha1.ManagedClusterAddOn)
		want bool
	}{
		{"served", func(*addonv1alpha1.ManagedClusterAddOn) {}, true},
		{"with a deployment config", templated("addon.open-cluster-management.io", "addondeploymentconfigs"), true},
		{"no label", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Labels = nil }, false},
		{"label false", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Labels[BuiltinLabel] = "false" }, false},
		{"no namespace yet", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Namespace = "" }, false},
		{"deleting", func(m *addonv1alpha1.ManagedClusterAddOn) { m.DeletionTimestamp = &now }, false},
		{"AddOnTemplate", templated("addon.open-cluster-management.io", "addontemplates"), false},
		{"Wasm template", templated("flotilla.dev", "wasmplugins"), false},
		{"no agent for it", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Name = "cluster-proxy" }, false},
	} {
		m := served()
		c.edit(m)
		if got := a.builtinWanted(m); got != c.want {
			t.Errorf("%s: wanted %v, want %v", c.name, got, c.want)
		}
	}
	if a.builtinWanted(nil) {
		t.Error("gone: wanted")
	}
}
