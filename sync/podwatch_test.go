package sync_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

func TestPodWatch(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	ns := controlplane.NewNamespace(t, cfg)
	admin, err := client.NewWithWatch(cfg, client.Options{})
	harness.Must(t, err)
	account(t, admin, ns, "deployer")
	harness.Must(t, admin.Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-x7k2p", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{ServiceAccountName: "deployer", Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}))
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	w := tethersync.NewPodWatch(tethersync.PodWatchOptions{Idle: time.Second, Sync: waitTimeout, RetryRefused: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the PodWatch stopped with %v", err)
		}
	})

	t.Run("the pods come from a watch, trimmed to what health reads, and it stops once idle", func(t *testing.T) {
		var pods []*unstructured.Unstructured
		harness.Eventually(t, waitTimeout, "the pods served from a watch", func(ctx context.Context) (bool, error) {
			var err error
			pods, err = w.Pods(ctx, "", admin, ns, web, 10)
			return err == nil, nil
		})
		if len(pods) != 1 || pods[0].GetName() != "web-x7k2p" {
			t.Fatalf("pods = %v, want web-x7k2p", pods)
		}
		if _, ok := pods[0].Object["spec"]; ok || pods[0].GetLabels()["app"] != "web" {
			t.Errorf("pod kept %v, want its labels and status without its spec", pods[0].Object)
		}
		if none, err := w.Pods(t.Context(), "", admin, ns, labels.SelectorFromSet(labels.Set{"app": "other"}), 10); err != nil || len(none) != 0 {
			t.Errorf("pods of another selector = %v, %v; want none", none, err)
		}
		harness.Eventually(t, waitTimeout, "the idle watch stops", func(context.Context) (bool, error) { return w.Watching() == 0, nil })
	})

	user := "system:serviceaccount:" + ns + ":deployer"
	icfg := rest.CopyConfig(cfg)
	icfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	tenant, err := client.NewWithWatch(icfg, client.Options{})
	harness.Must(t, err)

	t.Run("an account that may not list pods is shown none, never the agent's", func(t *testing.T) {
		if pods, err := w.Pods(t.Context(), user, tenant, ns, web, 10); err == nil || len(pods) != 0 {
			t.Errorf("pods = %v, %v; want none and an error", pods, err)
		}
		if n := w.Watching(); n != 0 {
			t.Errorf("%d watches run after the account's was refused, want none", n)
		}
	})

	t.Run("an account that may list but not watch pods is told to list them", func(t *testing.T) {
		other := "system:serviceaccount:" + ns + ":lister"
		account(t, admin, ns, "lister")
		listPods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}
		grant(t, admin, ns, ns, "lister", listPods)
		waitAllowed(t, admin, ns, ns, "lister", listPods)
		lcfg := rest.CopyConfig(cfg)
		lcfg.Impersonate = rest.ImpersonationConfig{UserName: other}
		lister, err := client.NewWithWatch(lcfg, client.Options{})
		harness.Must(t, err)
		harness.Eventually(t, waitTimeout, "the refused watch answered by an error", func(ctx context.Context) (bool, error) {
			_, err := w.Pods(ctx, other, lister, ns, web, 10)
			return err != nil && w.Watching() == 0, nil
		})
	})
}
