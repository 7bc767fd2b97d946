package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// TestInstallAndCheck: on a cluster of its own (the package's shared one has
// the CRDs already), `tether check` says the Sync CRD is missing and what to
// do; `check --pre` passes; `tether install` creates every object of the
// embedded install, CRDs Established; a second install changes nothing (every
// resourceVersion kept); `check` then names the agent that does not run (no
// nodes here) and passes once its Deployment is Available, a replica holds
// the Lease and its Service has endpoints; the namespaced install for two
// tenants then applies over it (an upgrade's "configured").
func TestInstallAndCheck(t *testing.T) {
	cp, c, tether := privateCluster(t)

	t.Run("check fails on a cluster without the CRD, saying what to do", func(t *testing.T) {
		out, err := tether("check")
		wantExit(t, err, exitFailed)
		wantLine(t, out, "✗ the Sync CRD (syncs.tether.dev) is not installed: run tether install")
		wantLine(t, out, "✗ the agent Deployment tether-system/tether is not installed: run tether install")
	})
	t.Run("check --pre passes", func(t *testing.T) {
		out, err := tether("check", "--pre", "--namespaced")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, line := range lines(out) {
			if !strings.HasPrefix(line, "✓ ") {
				t.Errorf("line %q did not pass", line)
			}
		}
		if len(lines(out)) != 3 {
			t.Errorf("want 3 lines (reachable, version, rights), got\n%s", out)
		}
	})

	want := embeddedInstall(t)
	t.Run("install creates every object, CRDs first", func(t *testing.T) {
		out, err := tether("install")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got := lines(out)
		if len(got) != len(want) {
			t.Fatalf("want one line per object (%d), got %d:\n%s", len(want), len(got), out)
		}
		for _, line := range got {
			if !strings.HasSuffix(line, " created") {
				t.Errorf("line %q: want created", line)
			}
		}
		if !strings.HasPrefix(got[0], "namespace/tether-system ") && !strings.HasPrefix(got[0], "customresourcedefinition.") {
			t.Errorf("first line %q: want the Namespace or a CRD first", got[0])
		}
		wantLine(t, out, "clusterrole.rbac.authorization.k8s.io/tether-controller created")
		wantLine(t, out, "deployment.apps/tether created")
	})

	t.Run("a second install changes nothing", func(t *testing.T) {
		// The API server's own controllers write the status of a FlowSchema and
		// a PriorityLevelConfiguration once after they are created; wait for
		// that, so that the versions compared are the settled ones.
		for _, kind := range []string{"FlowSchema", "PriorityLevelConfiguration"} {
			harness.Eventually(t, time.Minute, "the API server sets the status of the "+kind, func(ctx context.Context) (bool, error) {
				obj := liveOf(ctx, t, c, find(t, want, kind))
				conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
				return len(conds) > 0 || kind == "PriorityLevelConfiguration", nil
			})
		}
		before := resourceVersions(t, c, want)
		out, err := tether("install")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, line := range lines(out) {
			if !strings.HasSuffix(line, " unchanged") {
				t.Errorf("line %q: want unchanged", line)
			}
		}
		after := resourceVersions(t, c, want)
		for key, rv := range before {
			if after[key] != rv {
				t.Errorf("%s: resourceVersion %s became %s", key, rv, after[key])
			}
		}
	})

	t.Run("check names the agent that does not run", func(t *testing.T) {
		out, err := tether("check")
		wantExit(t, err, exitFailed)
		wantLine(t, out, "✓ the Sync CRD (syncs.tether.dev) serves v1alpha1 with this version's schema")
		wantLine(t, out, "✗ the agent Deployment tether-system/tether is not available (0 of 2 replicas ready): see kubectl -n tether-system describe deployment tether, and its pods' events and logs")
		wantLine(t, out, "✗ no replica holds the leader Lease tether-system/tether.dev: the agent is not running or cannot reach the API server; see kubectl -n tether-system logs deployment/tether")
		wantLine(t, out, "✗ the Service tether-system/tether has no ready endpoint for its port https-metrics: a scraper cannot reach the agent's metrics; see kubectl -n tether-system get endpointslices -l kubernetes.io/service-name=tether")
	})

	t.Run("check passes once the agent runs and leads", func(t *testing.T) {
		markAgentRunning(t, cp.Config())
		out, err := tether("check")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Logf("tether check:\n%s", out)
		wantLine(t, out, "✓ the agent Deployment tether-system/tether is available (2 of 2 replicas ready)")
		wantLine(t, out, "✓ the Service tether-system/tether has 2 ready endpoints for its port https-metrics")
		wantLine(t, out, "! the agent runs v0.1.0, and this CLI is a development build: use a released tether to compare versions")
		for _, line := range lines(out) {
			if strings.HasPrefix(line, "✗") {
				t.Errorf("failed: %s", line)
			}
		}
	})

	t.Run("the namespaced install for two tenants applies over it", func(t *testing.T) {
		for _, ns := range []string{"shop", "blog"} {
			harness.Must(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		}
		out, err := tether("install", "--namespaced", "--tenants", "shop,blog")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		wantLine(t, out, "deployment.apps/tether configured")
		wantLine(t, out, "validatingadmissionpolicy.admissionregistration.k8s.io/tether-agent-changes-no-sync-spec created")
		var bindings rbacv1.RoleBindingList
		harness.Must(t, c.List(t.Context(), &bindings, client.InNamespace("blog")))
		if len(bindings.Items) != 4 {
			t.Errorf("want the tenant's 4 RoleBindings in blog, got %d", len(bindings.Items))
		}
	})
}

// privateCluster starts a control plane for t alone (the package's shared one
// has Tether's CRDs already, and an install changes cluster-wide objects), and
// returns it, a client of it, and a function that runs tether against it.
func privateCluster(t *testing.T) (*controlplane.ControlPlane, client.Client, func(args ...string) (string, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	c, err := clientFor(cp.Config())
	harness.Must(t, err)
	tether := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), append(args, "--kubeconfig", cp.KubeconfigPath()), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	return cp, c, tether
}

// markAgentRunning does what the agent's pods would: the Deployment Available
// (through the status subresource) and the leader Lease held.
func markAgentRunning(t *testing.T, cfg *rest.Config) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	harness.Must(t, err)
	d, err := cs.AppsV1().Deployments(agentNamespace).Get(t.Context(), agentDeployment, metav1.GetOptions{})
	harness.Must(t, err)
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}},
	}
	_, err = cs.AppsV1().Deployments(agentNamespace).UpdateStatus(t.Context(), d, metav1.UpdateOptions{})
	harness.Must(t, err)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: leaderLeaseName(), Namespace: agentNamespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("tether-7d9f-abcde"),
			LeaseDurationSeconds: ptr.To[int32](3600), // held for the whole test
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	_, err = cs.CoordinationV1().Leases(agentNamespace).Create(t.Context(), lease, metav1.CreateOptions{})
	harness.Must(t, err)
	// What the EndpointSlice controller writes for the two ready pods.
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "tether-x7k2p", Namespace: agentNamespace, Labels: map[string]string{discoveryv1.LabelServiceName: agentService}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(metricsPortName), Port: ptr.To[int32](8443)}, {Name: ptr.To("http-webhook"), Port: ptr.To[int32](9292)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.0.0.8"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		},
	}
	_, err = cs.DiscoveryV1().EndpointSlices(agentNamespace).Create(t.Context(), slice, metav1.CreateOptions{})
	harness.Must(t, err)
}

// TestInstallExport: --export prints YAML of the kinds each install holds,
// with --image in every agent container and --tenants in place of the
// example tenants.
func TestInstallExport(t *testing.T) {
	export := func(t *testing.T, args ...string) []*unstructured.Unstructured {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(t.Context(), append([]string{"install", "--export"}, args...), &out, &errOut); err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		objs, err := decodeObjects(out.Bytes())
		if err != nil {
			t.Fatalf("the export does not parse: %v", err)
		}
		return objs
	}
	t.Run("the cluster-wide install", func(t *testing.T) {
		objs := export(t)
		for _, kind := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "NetworkPolicy", "FlowSchema"} {
			find(t, objs, kind)
		}
		if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetName() == "tether-ui" }) {
			t.Error("the UI is exported without --ui")
		}
	})
	t.Run("with the UI and another image", func(t *testing.T) {
		objs := export(t, "--ui", "--image", "registry.example.com/tether@sha256:0123")
		images := 0
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				if img := c.(map[string]any)["image"]; img != "registry.example.com/tether@sha256:0123" {
					t.Errorf("%s runs %v", o.GetName(), img)
				}
				images++
			}
		}
		if images != 2 {
			t.Errorf("want the agent's and the UI's containers, got %d", images)
		}
	})
	t.Run("the namespaced install for two tenants", func(t *testing.T) {
		objs := export(t, "--namespaced", "--tenants", "shop,blog")
		find(t, objs, "ValidatingAdmissionPolicy")
		perTenant := map[string]int{}
		for _, o := range objs {
			perTenant[o.GetNamespace()]++
		}
		if perTenant["shop"] == 0 || perTenant["shop"] != perTenant["blog"] || perTenant["team-a"]+perTenant["team-b"] != 0 {
			t.Errorf("objects per namespace: %v", perTenant)
		}
		args, _, _ := unstructured.NestedSlice(find(t, objs, "Deployment").Object, "spec", "template", "spec", "containers")
		if !slices.Contains(args[0].(map[string]any)["args"].([]any), any("--watch-namespaces=shop,blog")) {
			t.Errorf("the agent's arguments do not name the tenants: %v", args[0].(map[string]any)["args"])
		}
	})
	t.Run("--namespaced without --tenants is a usage error", func(t *testing.T) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), []string{"install", "--export", "--namespaced"}, &out, &errOut)
		if !errors.Is(err, errUsage) {
			t.Errorf("want a usage error, got %v", err)
		}
	})
}

func TestCheckSkew(t *testing.T) {
	for _, tc := range []struct{ cli, image, want string }{
		{"v0.2.0", "ghcr.io/tether-dev/tether:v0.2.0", "✓ the agent runs v0.2.0, as this CLI"},
		{"v0.2.0", "ghcr.io/tether-dev/tether:v0.1.0", "! the agent runs v0.1.0 and this CLI is v0.2.0: run tether install with this CLI to upgrade the agent, or use the CLI of the agent's version"},
		{"v0.2.0", "localhost:5000/tether:v0.2.0@sha256:ab", "✓ the agent runs v0.2.0, as this CLI"},
		{"v0.2.0", "localhost:5000/tether@sha256:ab", "! the agent runs localhost:5000/tether@sha256:ab, whose version has no tag to compare: compare it with this CLI's version (v0.2.0) yourself"},
		{"dev", "ghcr.io/tether-dev/tether:v0.1.0", "! the agent runs v0.1.0, and this CLI is a development build: use a released tether to compare versions"},
	} {
		if got := checkSkew(tc.cli, tc.image).String(); got != tc.want {
			t.Errorf("checkSkew(%q, %q)\n got %s\nwant %s", tc.cli, tc.image, got, tc.want)
		}
	}
}

func TestCheckServerVersion(t *testing.T) {
	for _, tc := range []struct {
		have, least string
		pass        bool
	}{
		{"v1.34.1", "1.27", true},
		{"v1.30.0-gke.1", "1.30", true},
		{"v1.29.9+k3s1", "1.30", false},
		{"v1.26.0", "1.27", false},
	} {
		if got := checkServerVersion(tc.have, tc.least); (got.status == checkPassed) != tc.pass {
			t.Errorf("%s against %s: %s", tc.have, tc.least, got)
		}
	}
}

func embeddedInstall(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := (&installFlags{}).manifests()
	harness.Must(t, err)
	return objs
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("no %s", kind)
	return nil
}

func liveOf(ctx context.Context, t *testing.T, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	harness.Must(t, c.Get(ctx, client.ObjectKeyFromObject(obj), live))
	return live
}

func resourceVersions(t *testing.T, c client.Client, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		out[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = liveOf(t.Context(), t, c, o).GetResourceVersion()
	}
	return out
}

func lines(out string) []string {
	return strings.Split(strings.TrimSpace(out), "\n")
}

func wantLine(t *testing.T, out, line string) {
	t.Helper()
	if !slices.Contains(lines(out), line) {
		t.Errorf("no line %q in\n%s", line, out)
	}
}

func wantExit(t *testing.T, err error, code int) {
	t.Helper()
	var coded *exitError
	if !errors.As(err, &coded) || coded.code != code {
		t.Errorf("want exit %d, got %v", code, err)
	}
}

// TestCheckCRDOfAnotherVersion: a CRD installed by another version (its schema
// differs) fails the check and says how to upgrade it.
func TestCheckCRDOfAnotherVersion(t *testing.T) {
	crds, err := embeddedCRDs()
	harness.Must(t, err)
	want := crds[0]
	live := want.DeepCopy()
	live.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	if got := checkCRD(want, live, true); got.status != checkPassed {
		t.Errorf("the same CRD: %s", got)
	}
	live.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["added"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	got := checkCRD(want, live, true).String()
	if wantLine := "✗ the Sync CRD (syncs.tether.dev) serves v1alpha1 with a schema other than this version's (tether dev): run tether install to upgrade it, or use the tether CLI of the installed version"; got != wantLine {
		t.Errorf("another schema:\n got %s\nwant %s", got, wantLine)
	}
}

// A released tether installs the agent of its own release, though the
// manifests it embeds name the image of the last one; --image wins; a build
// between releases installs what its manifests name.
func TestAReleasedCLIInstallsItsOwnRelease(t *testing.T) {
	for _, tc := range []struct{ flag, version, want string }{
		{"", "v1.2.3", "ghcr.io/tether-dev/tether:v1.2.3"},
		{"", "v1.2.3-rc.1", "ghcr.io/tether-dev/tether:v1.2.3-rc.1"},
		{"registry.example.com/tether@sha256:" + strings.Repeat("a", 64), "v1.2.3", "registry.example.com/tether@sha256:" + strings.Repeat("a", 64)},
		{"", "v1.2.3-4-gabcdef0", ""},
		{"", "v1.2.3-4-gabcdef0-dirty", ""},
		{"", "abcdef0", ""},
		{"", "dev", ""},
	} {
		if got := installImage(tc.flag, tc.version); got != tc.want {
			t.Errorf("installImage(%q, %q) = %q, want %q", tc.flag, tc.version, got, tc.want)
		}
	}
}
