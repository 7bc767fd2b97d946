package multicluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tetheragent "tether.dev/tether/agent"
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

func TestMain(m *testing.M) {
	source.ServeRenderWorker()
	ctrl.SetLogger(logr.Discard())
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}

// waitTimeout guards every wait against hangs; it is not a performance assertion.
const waitTimeout = 2 * time.Minute

// remote is a control plane on loopback that the hub's agent applies to.
type remote struct {
	cp     *controlplane.ControlPlane
	client client.Client
	// kubeconfig is its admin kubeconfig, self-contained.
	kubeconfig []byte
}

// startRemotes starts n control planes at once, stopped when the test ends.
func startRemotes(t *testing.T, n int) []*remote {
	t.Helper()
	var out []*remote
	for _, cp := range controlplane.StartMany(t, n, controlplane.Options{}) {
		c, err := client.New(cp.Config(), client.Options{})
		harness.Must(t, err)
		kubeconfig, err := os.ReadFile(cp.KubeconfigPath())
		harness.Must(t, err)
		out = append(out, &remote{cp: cp, client: c, kubeconfig: kubeconfig})
	}
	return out
}

// withToken is kc with its user's credentials replaced by a bearer token that
// no API server knows.
func withToken(t *testing.T, kc []byte, token string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kc)
	harness.Must(t, err)
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name].ClientCertificateData, cfg.AuthInfos[name].ClientKeyData = nil, nil
		cfg.AuthInfos[name].Token = token
	}
	out, err := clientcmd.Write(*cfg)
	harness.Must(t, err)
	return out
}

// configMap is a ConfigMap's manifest.
func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

// secret writes a Secret holding data.
func putSecret(t *testing.T, c client.Client, s *corev1.Secret) {
	t.Helper()
	err := c.Create(t.Context(), s)
	if apierrors.IsAlreadyExists(err) {
		err = c.Update(t.Context(), s)
	}
	harness.Must(t, err)
}

// value reads the ConfigMap name's value in namespace ns of c; "" and false when
// it does not exist.
func value(ctx context.Context, c client.Client, ns, name string) (string, bool, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	return cm.Data["value"], err == nil, err
}

// waitValue waits until the ConfigMap holds want (or, with want "", is gone).
func waitValue(t *testing.T, c client.Client, ns, name, want string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, fmt.Sprintf("ConfigMap %s/%s to hold %q", ns, name, want), func(ctx context.Context) (bool, error) {
		got, ok, err := value(ctx, c, ns, name)
		return got == want && ok == (want != ""), err
	})
}

// drift changes the ConfigMap settings by hand and returns how long the agent took to put
// git's value back. The time is quoted, not asserted.
func drift(t *testing.T, c client.Client, ns, want string) time.Duration {
	const name = "settings"
	t.Helper()
	cm := &corev1.ConfigMap{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm))
	cm.Data["value"] = "changed by hand"
	start := time.Now()
	harness.Must(t, c.Update(t.Context(), cm))
	waitValue(t, c, ns, name, want)
	return time.Since(start)
}

// requestReconcile asks for a reconcile of s that looks at git at once, and
// returns the request's value.
func requestReconcile(t *testing.T, c client.Client, s *v1alpha1.Sync) string {
	t.Helper()
	value := time.Now().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.ReconcileRequestedAnnotation, value)
	harness.Must(t, c.Patch(t.Context(), s.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))))
	return value
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// get reads s as it is now.
func get(t *testing.T, c client.Client, s *v1alpha1.Sync) *v1alpha1.Sync {
	t.Helper()
	got := &v1alpha1.Sync{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(s), got))
	return got
}

func readyReason(s *v1alpha1.Sync) string {
	if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}

// TestSyncsApplyToRemoteClusters runs one agent on the hub (the shared control
// plane) and two remote control planes: a Sync reaches the first through a
// kubeconfig Secret of its own namespace, another the second through a cluster
// the operator registered. Drift on a remote is reverted by watch (the Syncs'
// interval is an hour), an object that left git is pruned there, a stopped
// remote makes only its own Sync say so while the other remote's drift is still
// corrected, and it converges once restarted; a rotated kubeconfig is used at
// once; tenancy holds.
func TestSyncsApplyToRemoteClusters(t *testing.T) {
	remotes := startRemotes(t, 2)
	a, b := remotes[0], remotes[1]
	hub := controlplane.Shared(t).Config()
	home := controlplane.NewNamespace(t, hub)
	// The manager's requests are counted: those that read a Secret.
	var secretReads atomic.Int64
	counted := func(cfg *rest.Config) *rest.Config {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/secrets/") {
					secretReads.Add(1)
				}
				return rt.RoundTrip(r)
			})
		})
		return cfg
	}
	agent := rig.Start(t, rig.Options{Agent: func(o *tetheragent.Options) { o.ClusterNamespace = home }, ManagerConfig: counted, WaitTimeout: waitTimeout})
	ns := controlplane.NewNamespace(t, hub)
	for _, r := range remotes {
		harness.Must(t, r.client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}

	repo := gitserver.NewLocalRepo(t, "fleet")
	first := repo.Commit(t, map[string]string{
		"app/settings.yaml": configMap("settings", "one"),
		"app/extra.yaml":    configMap("extra", "x"),
	}, "two ConfigMaps")

	// The kubeconfig of remote a, in a Secret of the Sync's namespace (Flux's
	// key); remote b registered by the operator for namespace ns.
	putSecret(t, agent.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-a"}, Data: map[string][]byte{"value.yaml": a.kubeconfig}})
	putSecret(t, agent.Client, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "cluster-b",
			Labels:      map[string]string{v1alpha1.ClusterLabel: "true"},
			Annotations: map[string]string{v1alpha1.AllowedNamespacesAnnotation: "other, " + ns}},
		Data: map[string][]byte{v1alpha1.ClusterKubeConfigKey: b.kubeconfig},
	})
	newSync := func(name string, dest v1alpha1.DestinationSpec) *v1alpha1.Sync {
		s := &v1alpha1.Sync{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.SyncSpec{
				Source: v1alpha1.SourceSpec{
					URL: repo.FileURL(), Ref: v1alpha1.GitRef{Branch: "main"}, Path: "app",
					Interval: &metav1.Duration{Duration: time.Hour},
				},
				Destination: dest,
			},
		}
		harness.Must(t, agent.Client.Create(t.Context(), s))
		return s
	}
	syncA := newSync("to-a", v1alpha1.DestinationSpec{Namespace: ns, KubeConfig: &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: "cluster-a"}}})
	syncB := newSync("to-b", v1alpha1.DestinationSpec{Namespace: ns, Cluster: "cluster-b"})

	for _, s := range []*v1alpha1.Sync{syncA, syncB} {
		got := agent.WaitFor(t, s, "Ready at the first commit", func(s *v1alpha1.Sync) bool {
			return strings.HasSuffix(s.Status.LastAppliedRevision, first) && rig.IsReady(s)
		})
		if want := s.Spec.Destination.ClusterName(); got.Status.Cluster != want {
			t.Errorf("Sync %s: status.cluster %q, want %q", s.Name, got.Status.Cluster, want)
		}
	}
	for _, r := range remotes {
		waitValue(t, r.client, ns, "settings", "one")
	}
	if _, ok, err := value(t.Context(), agent.Client, ns, "settings"); err != nil || ok {
		t.Fatalf("the hub holds the remote's ConfigMap (%v, %v): a remote Sync applied at home", ok, err)
	}
	if n := agent.Reconciler.Agent.Clusters.Connected(); n != 2 {
		t.Errorf("%d remote clusters connected, want 2", n)
	}

	t.Run("drift on a remote is reverted by watch", func(t *testing.T) {
		t.Logf("drift reverted on remote a in %s, on remote b in %s (interval: 1h)",
			drift(t, a.client, ns, "one"), drift(t, b.client, ns, "one"))
	})

	t.Run("a converged remote Sync reads no Secret", func(t *testing.T) {
		before := secretReads.Load()
		for _, s := range []*v1alpha1.Sync{syncA, syncB} {
			value := requestReconcile(t, agent.Client, s)
			agent.WaitFor(t, s, "the reconcile requested answered", func(s *v1alpha1.Sync) bool {
				return s.Status.LastHandledReconcileAt == value && rig.IsReady(s)
			})
		}
		if n := secretReads.Load() - before; n != 0 {
			t.Errorf("%d Secrets read by two reconciles of converged remote Syncs, want 0: their kubeconfigs are watched", n)
		}
	})

	t.Run("an object that left git is pruned on the remote", func(t *testing.T) {
		second := repo.Commit(t, map[string]string{"app/extra.yaml": "", "app/settings.yaml": configMap("settings", "two")}, "extra leaves")
		for _, s := range []*v1alpha1.Sync{syncA, syncB} {
			requestReconcile(t, agent.Client, s)
			agent.WaitApplied(t, s, second)
		}
		for _, r := range remotes {
			waitValue(t, r.client, ns, "extra", "")
			waitValue(t, r.client, ns, "settings", "two")
		}
	})

	t.Run("a stopped remote hurts no other", func(t *testing.T) {
		before := drift(t, b.client, ns, "two")
		pausing := time.Now()
		harness.Must(t, a.cp.Pause())
		stopped := time.Now()
		got := agent.WaitFor(t, syncA, "ClusterUnreachable", func(s *v1alpha1.Sync) bool {
			return readyReason(s) == "False/"+v1alpha1.ReasonClusterUnreachable
		})
		told := time.Since(stopped)
		msg := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition).Message
		if !strings.Contains(msg, "cluster secret/cluster-a") {
			t.Errorf("the condition does not name the cluster: %s", msg)
		}
		during := drift(t, b.client, ns, "two")
		t.Logf("remote a's API server killed (in %s): its Sync said so %s after (interval 1h); remote b's drift reverted in %s before, %s while a was down",
			stopped.Sub(pausing), told, before, during)
		if s := get(t, agent.Client, syncB); !rig.IsReady(s) {
			t.Errorf("the Sync of remote b is not Ready while a is down: %s", readyReason(s))
		}

		harness.Must(t, a.cp.Resume(t.Context()))
		agent.WaitFor(t, syncA, "Ready again", rig.IsReady)
		t.Logf("remote a back: its drift is reverted in %s", drift(t, a.client, ns, "two"))
	})

	t.Run("a rotated kubeconfig is used without a restart", func(t *testing.T) {
		putSecret(t, agent.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-a"}, Data: map[string][]byte{"value.yaml": withToken(t, a.kubeconfig, "revoked")}})
		agent.WaitFor(t, syncA, "failing with the rotated-out credentials", func(s *v1alpha1.Sync) bool {
			return strings.HasPrefix(readyReason(s), "False/")
		})
		putSecret(t, agent.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-a"}, Data: map[string][]byte{"value.yaml": a.kubeconfig}})
		agent.WaitFor(t, syncA, "Ready with the new credentials", rig.IsReady)
		harness.Eventually(t, waitTimeout, "the rotated-out cluster connection to stop", func(context.Context) (bool, error) {
			return agent.Reconciler.Agent.Clusters.Connected() == 2, nil
		})
	})

	t.Run("tenancy holds", func(t *testing.T) {
		other := controlplane.NewNamespace(t, hub)
		refused := func(name, reason string, dest v1alpha1.DestinationSpec) {
			s := &v1alpha1.Sync{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: other},
				Spec: v1alpha1.SyncSpec{
					Source:      v1alpha1.SourceSpec{URL: repo.FileURL(), Ref: v1alpha1.GitRef{Branch: "main"}, Path: "app"},
					Destination: dest,
				},
			}
			harness.Must(t, agent.Client.Create(t.Context(), s))
			got := agent.WaitFor(t, s, reason, func(s *v1alpha1.Sync) bool { return readyReason(s) == "False/"+reason })
			t.Logf("%s: %s", name, apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition).Message)
		}
		// The Secret cluster-a exists, in namespace ns: a Sync of another
		// namespace names a Secret of its own, and there is none.
		refused("names-anothers-kubeconfig", v1alpha1.ReasonKubeConfigNotFound,
			v1alpha1.DestinationSpec{KubeConfig: &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: "cluster-a"}}})
		refused("names-a-cluster-not-allowed", v1alpha1.ReasonClusterNotAllowed, v1alpha1.DestinationSpec{Cluster: "cluster-b"})
		refused("names-no-cluster", v1alpha1.ReasonClusterNotFound, v1alpha1.DestinationSpec{Cluster: "nowhere"})
		for _, r := range remotes {
			list := &corev1.ConfigMapList{}
			harness.Must(t, r.client.List(t.Context(), list, client.InNamespace(other)))
			if len(list.Items) > 0 {
				t.Errorf("a refused Sync wrote to a remote: %d ConfigMaps in %s", len(list.Items), other)
			}
		}
	})

	t.Run("an account is impersonated in the remote cluster", func(t *testing.T) {
		// deployer reads the kubeconfig Secret on the hub (as everything a Sync
		// names there is read) and exists in remote a with no right at all.
		harness.Must(t, agent.Client.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}}))
		harness.Must(t, agent.Client.Create(t.Context(), &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-kubeconfig"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"cluster-a"}, Verbs: []string{"get", "watch"}}},
		}))
		harness.Must(t, agent.Client.Create(t.Context(), &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-kubeconfig"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-kubeconfig"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "deployer"}},
		}))
		harness.Must(t, a.client.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}}))
		s := newSync("as-deployer", v1alpha1.DestinationSpec{Namespace: ns, KubeConfig: &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: "cluster-a"}}})
		patch := `{"spec":{"serviceAccountName":"deployer"}}`
		harness.Must(t, agent.Client.Patch(t.Context(), s, client.RawPatch(types.MergePatchType, []byte(patch))))
		got := agent.WaitFor(t, s, "Forbidden in remote a", func(s *v1alpha1.Sync) bool {
			return readyReason(s) == "False/"+v1alpha1.ReasonForbidden
		})
		msg := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition).Message
		if !strings.Contains(msg, "system:serviceaccount:"+ns+":deployer") {
			t.Errorf("the refusal does not name the account impersonated in the remote: %s", msg)
		}
		harness.Must(t, agent.Client.Delete(t.Context(), s))
		harness.Eventually(t, waitTimeout, "the Sync to go", func(ctx context.Context) (bool, error) {
			err := agent.Client.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	})

	t.Run("a SyncSet makes a Sync per registered cluster", func(t *testing.T) {
		// Remote a registered too, under another name and with a label.
		putSecret(t, agent.Client, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "cluster-a2",
				Labels:      map[string]string{v1alpha1.ClusterLabel: "true", "env": "dev"},
				Annotations: map[string]string{v1alpha1.AllowedNamespacesAnnotation: "*"}},
			Data: map[string][]byte{v1alpha1.ClusterKubeConfigKey: a.kubeconfig},
		})
		fleetCommit := repo.Commit(t, map[string]string{"fleet/app.yaml": configMap("from-syncset", "${env}")}, "a fleet app")
		spec := fmt.Sprintf(`{"source": {"url": %q, "ref": {"branch": "main"}, "path": "fleet", "interval": "1h"},
			"destination": {"namespace": %q, "cluster": "{{cluster}}"},
			"postBuild": {"substitute": {"env": "{{cluster.labels.env}}"}}}`, repo.FileURL(), ns)
		spec = strings.ReplaceAll(spec, ` | default \"none\"`, "")
		ss := &v1alpha1.SyncSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "everywhere"},
			Spec: v1alpha1.SyncSetSpec{
				Generators: []v1alpha1.SyncSetGenerator{{Clusters: &v1alpha1.ClustersGenerator{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}}},
				Template: v1alpha1.SyncTemplate{Metadata: v1alpha1.SyncTemplateMeta{Name: "app-{{cluster}}"}, Spec: apiextensionsv1.JSON{Raw: []byte(spec)}},
			},
		}
		harness.Must(t, agent.Client.Create(t.Context(), ss))
		made := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-cluster-a2"}}
		got := agent.WaitFor(t, made, "the Sync of cluster-a2 Ready", func(s *v1alpha1.Sync) bool {
			return strings.HasSuffix(s.Status.LastAppliedRevision, fleetCommit) && rig.IsReady(s)
		})
		if got.Spec.Destination.Cluster != "cluster-a2" {
			t.Errorf("the SyncSet's Sync applies to %q, want cluster-a2", got.Spec.Destination.Cluster)
		}
		waitValue(t, a.client, ns, "from-syncset", "dev")
		// cluster-b has no label env=dev: no Sync for it.
		err := agent.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app-cluster-b"}, &v1alpha1.Sync{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("a Sync for cluster-b, which the selector does not choose: %v", err)
		}
		// (This control plane runs no garbage collector: the Sync the SyncSet
		// owns is deleted by hand, as the collector would.)
		harness.Must(t, agent.Client.Delete(t.Context(), ss))
		harness.Must(t, agent.Client.Delete(t.Context(), made))
		waitValue(t, a.client, ns, "from-syncset", "")
	})

	t.Run("deleting the Syncs prunes on the remotes and stops the connections", func(t *testing.T) {
		for _, s := range []*v1alpha1.Sync{syncA, syncB} {
			harness.Must(t, agent.Client.Delete(t.Context(), s))
		}
		for _, r := range remotes {
			waitValue(t, r.client, ns, "settings", "")
		}
		harness.Eventually(t, waitTimeout, "every remote connection to stop", func(context.Context) (bool, error) {
			return agent.Reconciler.Agent.Clusters.Connected() == 0, nil
		})
	})
}
