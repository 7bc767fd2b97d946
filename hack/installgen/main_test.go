package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

func TestSplitImage(t *testing.T) {
	for ref, want := range map[string][2]string{
		"ghcr.io/tether-dev/tether:v0.1.0":   {"ghcr.io/tether-dev/tether", "v0.1.0"},
		"localhost:5000/tether":              {"localhost:5000/tether", ""},
		"localhost:5000/tether:v1":           {"localhost:5000/tether", "v1"},
		"ghcr.io/tether-dev/tether@sha256:0": {"ghcr.io/tether-dev/tether", "sha256:0"},
		"busybox":                            {"busybox", ""},
	} {
		if name, tag := splitImage(ref); name != want[0] || tag != want[1] {
			t.Errorf("splitImage(%q) = %q, %q; want %q, %q", ref, name, tag, want[0], want[1])
		}
	}
}

// TestRenderPinsTheReleaseAndRefusesLatest renders a kustomization of one
// Deployment: with -version the agent's image takes that tag, and an image tagged
// latest, or not at all, is refused by name.
func TestRenderPinsTheReleaseAndRefusesLatest(t *testing.T) {
	dir := t.TempDir()
	write := func(image string) {
		deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: tether}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: controller, image: " + image + "}\n"
		for name, data := range map[string]string{"kustomization.yaml": "resources: [deployment.yaml]\n", "deployment.yaml": deployment} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(agentImage + ":v0.1.0")
	_, out, err := render(dir, "v0.2.0", "")
	if err != nil || !strings.Contains(string(out), "image: "+agentImage+":v0.2.0") {
		t.Errorf("render with -version v0.2.0: %v\n%s", err, out)
	}
	for _, image := range []string{agentImage + ":latest", "busybox"} {
		write(image)
		if _, _, err := render(dir, "", ""); err == nil || !strings.Contains(err.Error(), image) {
			t.Errorf("image %s: error %v, want a refusal naming it", image, err)
		}
	}
	if err := run(dir, t.TempDir(), "latest", ""); err == nil {
		t.Error("-version latest was accepted")
	}
}

// TestTheInstallAdmitsOnlyTheAgentsPorts reads the generated install.yaml: its
// NetworkPolicy selects the agent's pods and admits ingress only to the metrics,
// probe and webhook ports, which are every port the agent's container has: metrics
// from the monitoring namespace only, webhooks and probes from anywhere.
func TestTheInstallAdmitsOnlyTheAgentsPorts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var policy networkingv1.NetworkPolicy
	var deployment appsv1.Deployment
	for _, doc := range strings.Split(string(data), "\n---\n") {
		switch {
		case strings.Contains(doc, "\nkind: NetworkPolicy\n"):
			err = sigsyaml.Unmarshal([]byte(doc), &policy)
		case strings.Contains(doc, "\nkind: Deployment\n"):
			err = sigsyaml.Unmarshal([]byte(doc), &deployment)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(policy.Spec.PodSelector, *deployment.Spec.Selector) {
		t.Errorf("NetworkPolicy selects %v, the Deployment's pods are %v", policy.Spec.PodSelector, deployment.Spec.Selector)
	}
	if !slices.Equal(policy.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Fatalf("NetworkPolicy policy types %v: want Ingress only", policy.Spec.PolicyTypes)
	}
	// from says, per admitted port, where from: "anywhere", or the namespaces selected.
	from := map[string]string{}
	for _, rule := range policy.Spec.Ingress {
		source := "anywhere"
		if len(rule.From) > 0 {
			source = ""
			for _, peer := range rule.From {
				if peer.NamespaceSelector == nil || peer.PodSelector != nil || peer.IPBlock != nil {
					t.Fatalf("NetworkPolicy peer %+v: want a namespaceSelector alone", peer)
				}
				source += metav1.FormatLabelSelector(peer.NamespaceSelector)
			}
		}
		for _, p := range rule.Ports {
			if _, twice := from[p.Port.String()]; twice {
				t.Errorf("NetworkPolicy admits port %s in two rules", p.Port)
			}
			from[p.Port.String()] = source
		}
	}
	want := map[string]string{
		"https-metrics": "kubernetes.io/metadata.name=monitoring",
		"http-health":   "anywhere",
		"http-webhook":  "anywhere",
	}
	if !reflect.DeepEqual(from, want) {
		t.Errorf("NetworkPolicy admits %v; want %v", from, want)
	}
	var container []string
	for _, p := range deployment.Spec.Template.Spec.Containers[0].Ports {
		container = append(container, p.Name)
	}
	slices.Sort(container)
	if wantPorts := []string{"http-health", "http-webhook", "https-metrics"}; !slices.Equal(container, wantPorts) {
		t.Errorf("the container has ports %v; want %v", container, wantPorts)
	}
}

// TestTheUIInstallHasNoRightsOfItsOwn reads the generated deploy/ui.yaml: a
// ServiceAccount with no token mounted, a Deployment of one pod running
// `tether ui --in-cluster` as that account, without its token, a Service to its
// port, the NetworkPolicy and its users' ClusterRoles; no binding, there or in
// install.yaml.
func TestTheUIInstallHasNoRightsOfItsOwn(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "ui.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var account corev1.ServiceAccount
	var deployment appsv1.Deployment
	var service corev1.Service
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := sigsyaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind == "" {
			continue
		}
		kinds = append(kinds, meta.Kind)
		switch meta.Kind {
		case "ServiceAccount":
			err = sigsyaml.Unmarshal([]byte(doc), &account)
		case "Deployment":
			err = sigsyaml.Unmarshal([]byte(doc), &deployment)
		case "Service":
			err = sigsyaml.Unmarshal([]byte(doc), &service)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(kinds)
	// The ClusterRoles are for binding to the UI's users; nothing binds them, or
	// anything, to the UI's account.
	if want := []string{"ClusterRole", "ClusterRole", "Deployment", "NetworkPolicy", "Service", "ServiceAccount"}; !slices.Equal(kinds, want) {
		t.Errorf("deploy/ui.yaml holds %v, want %v and nothing that grants rights", kinds, want)
	}
	pod := deployment.Spec.Template.Spec
	if account.AutomountServiceAccountToken == nil || *account.AutomountServiceAccountToken || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the UI's account or pod mounts a token: the UI must act with its users' tokens only")
	}
	if pod.ServiceAccountName != account.Name || account.Namespace != "tether-system" {
		t.Errorf("the pod runs as %q, the account is %s/%s", pod.ServiceAccountName, account.Namespace, account.Name)
	}
	if c := pod.Containers[0]; len(c.Args) < 2 || c.Args[0] != "ui" || !slices.Contains(c.Args, "--in-cluster") {
		t.Errorf("the UI's container runs %v, want tether ui --in-cluster", c.Args)
	}
	if !reflect.DeepEqual(service.Spec.Selector, deployment.Spec.Selector.MatchLabels) || service.Spec.Ports[0].TargetPort.String() != pod.Containers[0].Ports[0].Name {
		t.Errorf("the Service selects %v to port %s; the pods are %v with port %s", service.Spec.Selector, service.Spec.Ports[0].TargetPort.String(), deployment.Spec.Selector.MatchLabels, pod.Containers[0].Ports[0].Name)
	}
	install, err := os.ReadFile(filepath.Join("..", "..", "deploy", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(install), "name: "+account.Name+"\n") {
		t.Errorf("install.yaml names %s: nothing may grant the UI rights", account.Name)
	}
}

// uiDocs decodes each document of the generated deploy/ui.yaml of kind into a
// new T.
func uiDocs[T any](t *testing.T, kind string) []*T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "ui.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*T
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if !strings.Contains(doc, "\nkind: "+kind+"\n") {
			continue
		}
		v := new(T)
		if err := sigsyaml.UnmarshalStrict([]byte(doc), v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// grants flattens rules into "group/resource verb" strings, sorted.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+"/"+res+" "+v)
				}
			}
		}
		for _, u := range r.NonResourceURLs {
			out = append(out, u+" nonresource")
		}
		for _, n := range r.ResourceNames {
			out = append(out, "named "+n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestTheUIUserRolesGrantWhatThePagesAndActionsNeed reads the ClusterRoles of
// deploy/ui.yaml: tether-ui-viewer reads Syncs, lists what a Sync's page
// shows and reads Pods' logs, no more (no Secrets, no wildcard, no write); tether-ui-operator is the
// viewer plus patching Syncs and creating Events. (ui's
// TestTheShippedUserRolesLetAViewerSeeAndAnOperatorAct shows they suffice, against
// the API server.)
func TestTheUIUserRolesGrantWhatThePagesAndActionsNeed(t *testing.T) {
	roles := map[string][]string{}
	for _, r := range uiDocs[rbacv1.ClusterRole](t, "ClusterRole") {
		if r.AggregationRule != nil {
			t.Errorf("%s aggregates: its rules would be the aggregation controller's, not these", r.Name)
		}
		roles[r.Name] = grants(r.Rules)
	}
	viewer := []string{
		"/events list", "/pods get", "/pods list", "/pods/log get", "apps/replicasets get", "apps/replicasets list",
		"batch/jobs get", "batch/jobs list", "discovery.k8s.io/endpointslices get", "discovery.k8s.io/endpointslices list",
		"tether.dev/syncs get", "tether.dev/syncs list", "tether.dev/syncs watch",
	}
	operator := slices.Sorted(slices.Values(append(slices.Clone(viewer), "/events create", "tether.dev/syncs patch")))
	want := map[string][]string{"tether-ui-viewer": viewer, "tether-ui-operator": operator}
	if !reflect.DeepEqual(roles, want) {
		t.Errorf("deploy/ui.yaml's ClusterRoles grant\n%v\nwant\n%v", roles, want)
	}
}

// TestTheUINetworkPolicyAdmitsItsPortAndEgressByPort reads deploy/ui.yaml's
// NetworkPolicy: it selects the UI's pods, admits ingress only to the
// container's one port, from anywhere, and egress only to DNS, the API server's
// ports (443 also https git) and ssh git.
func TestTheUINetworkPolicyAdmitsItsPortAndEgressByPort(t *testing.T) {
	policies := uiDocs[networkingv1.NetworkPolicy](t, "NetworkPolicy")
	deployments := uiDocs[appsv1.Deployment](t, "Deployment")
	if len(policies) != 1 || len(deployments) != 1 {
		t.Fatalf("deploy/ui.yaml holds %d NetworkPolicies and %d Deployments, want one each", len(policies), len(deployments))
	}
	policy, deployment := policies[0], deployments[0]
	if !reflect.DeepEqual(policy.Spec.PodSelector, *deployment.Spec.Selector) {
		t.Errorf("NetworkPolicy selects %v, the UI's pods are %v", policy.Spec.PodSelector, deployment.Spec.Selector)
	}
	if !slices.Equal(policy.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("NetworkPolicy policy types %v: want Ingress and Egress", policy.Spec.PolicyTypes)
	}
	// ports lists each rule's ports as "port/protocol", failing on any peer: the
	// shipped policy limits by port only.
	ports := func(what string, peers int, list []networkingv1.NetworkPolicyPort) []string {
		if peers > 0 {
			t.Errorf("NetworkPolicy %s names peers: want ports only", what)
		}
		var out []string
		for _, p := range list {
			out = append(out, p.Port.String()+"/"+string(*p.Protocol))
		}
		return out
	}
	var ingress, egress []string
	for _, r := range policy.Spec.Ingress {
		ingress = append(ingress, ports("ingress", len(r.From), r.Ports)...)
	}
	for _, r := range policy.Spec.Egress {
		egress = append(egress, ports("egress", len(r.To), r.Ports)...)
	}
	container := deployment.Spec.Template.Spec.Containers[0].Ports
	if len(container) != 1 || !slices.Equal(ingress, []string{container[0].Name + "/TCP"}) {
		t.Errorf("NetworkPolicy admits %v; the container's ports are %v", ingress, container)
	}
	slices.Sort(egress)
	if want := []string{"22/TCP", "443/TCP", "53/TCP", "53/UDP", "6443/TCP"}; !slices.Equal(egress, want) {
		t.Errorf("NetworkPolicy lets out %v; want %v", egress, want)
	}
}
