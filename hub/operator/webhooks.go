package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// serverManagedBy is the app.kubernetes.io/managed-by value hub/webhook's Server labels its
// webhook configurations and serving Secret with.
const serverManagedBy = "flotilla-hub"

// webhookObjects are the webhook configurations (Validating and Mutating share the name) and
// serving Secrets the hub's processes write for ClusterManager cm in either topology: Single's
// (hub/webhook's defaults) and each Split webhook component's (the chart's
// --webhook-configuration-name and --webhook-secret-name).
func webhookObjects(cm string) (configs, secrets []string) {
	configs = []string{webhook.DefaultConfigurationName}
	secrets = []string{webhook.DefaultSecretName}
	for _, c := range []string{"registration-webhook", "work-webhook", "addon-webhook"} {
		configs = append(configs, cm+"-"+c)
		secrets = append(secrets, cm+"-"+c+"-serving-cert")
	}
	return configs, secrets
}

// webhooksInUse are the webhook configurations and Secrets the rendered Deployments' processes
// write: a hub serving webhooks names them by flag, or takes hub/webhook's defaults.
func webhooksInUse(objs []*unstructured.Unstructured) (configs, secrets []string) {
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		ctrs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range ctrs {
			args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
			flag := func(name, def string) string {
				v := def
				for _, a := range args {
					if s, ok := strings.CutPrefix(a, "--"+name+"="); ok {
						v = s
					}
				}
				return v
			}
			if bind := flag("webhook-bind-address", ""); len(args) == 0 || args[0] != "hub" || bind == "" || bind == "0" {
				continue
			}
			configs = append(configs, flag("webhook-configuration-name", webhook.DefaultConfigurationName))
			secrets = append(secrets, flag("webhook-secret-name", webhook.DefaultSecretName))
		}
	}
	return configs, secrets
}

// retireWebhooks deletes the webhook configurations and serving Secrets a hub process wrote
// for a topology or component no longer rendered (Single to Split, the add-on manager switched
// off): the prune removed the Service they call, so left alone they would fail every request
// they match. Only objects hub/webhook's Server labelled are deleted. It reports whether it
// deleted anything.
func retireWebhooks(ctx context.Context, kube kubernetes.Interface, cm string, objs []*unstructured.Unstructured) (bool, error) {
	allConfigs, allSecrets := webhookObjects(cm)
	usedConfigs, usedSecrets := webhooksInUse(objs)
	deleted := false
	del := func(kind, name string, get func() (metav1.Object, error), remove func(metav1.DeleteOptions) error) error {
		o, err := get()
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", kind, name, err)
		}
		if o.GetLabels()[ManagedByLabel] != serverManagedBy {
			return nil
		}
		uid := o.GetUID()
		if err := remove(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting %s %s, which no component uses: %w", kind, name, err)
		}
		deleted = true
		return nil
	}
	adm := kube.AdmissionregistrationV1()
	for _, name := range allConfigs {
		if slices.Contains(usedConfigs, name) {
			continue
		}
		if err := del("ValidatingWebhookConfiguration", name,
			func() (metav1.Object, error) {
				return adm.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			},
			func(o metav1.DeleteOptions) error { return adm.ValidatingWebhookConfigurations().Delete(ctx, name, o) }); err != nil {
			return deleted, err
		}
		if err := del("MutatingWebhookConfiguration", name,
			func() (metav1.Object, error) {
				return adm.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			},
			func(o metav1.DeleteOptions) error { return adm.MutatingWebhookConfigurations().Delete(ctx, name, o) }); err != nil {
			return deleted, err
		}
	}
	secrets := kube.CoreV1().Secrets(operatorv1.ClusterManagerDefaultNamespace)
	for _, name := range allSecrets {
		if slices.Contains(usedSecrets, name) {
			continue
		}
		key := types.NamespacedName{Namespace: operatorv1.ClusterManagerDefaultNamespace, Name: name}.String()
		if err := del("Secret", key,
			func() (metav1.Object, error) { return secrets.Get(ctx, name, metav1.GetOptions{}) },
			func(o metav1.DeleteOptions) error { return secrets.Delete(ctx, name, o) }); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
