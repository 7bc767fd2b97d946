package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"tether.dev/tether/deploy"
)

// installChecks are the checks of an install. When the API server does not
// answer, that is the one result.
func installChecks(ctx context.Context, cs kubernetes.Interface, cfg *rest.Config) ([]checkResult, error) {
	reach, _ := checkReachable(cs, cfg.Host)
	if reach.status == checkFailed {
		return []checkResult{reach}, nil
	}
	crds, err := embeddedCRDs()
	if err != nil {
		return nil, err
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	results := []checkResult{reach}
	for _, want := range crds {
		live, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the CRD %s: %w", want.Name, err)
		}
		results = append(results, checkCRD(want, live, err == nil))
	}
	deployment, err := cs.AppsV1().Deployments(agentNamespace).Get(ctx, agentDeployment, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return append(results, checkFail("run tether install", "the agent Deployment %s/%s is not installed", agentNamespace, agentDeployment)), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the agent Deployment: %w", err)
	}
	results = append(results, checkDeployment(deployment))
	lease, err := cs.CoordinationV1().Leases(agentNamespace).Get(ctx, leaderLeaseName(), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the leader Lease: %w", err)
	}
	if err != nil {
		lease = nil
	}
	results = append(results, checkLeader(lease, time.Now()))
	endpoints, err := cs.DiscoveryV1().EndpointSlices(agentNamespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + agentService})
	if err != nil {
		return nil, fmt.Errorf("reading the endpoints of the Service %s: %w", agentService, err)
	}
	results = append(results, checkMetricsEndpoints(endpoints.Items))
	return append(results, checkSkew(version, agentImage(deployment))), nil
}

// leaderLeaseName is the Lease the agent of the embedded install (one
// unsharded agent) leads through.
func leaderLeaseName() string { return shardFlag{}.leaseName() }

// embeddedCRDs are the CRDs of this version's install.
func embeddedCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, err := decodeObjects(deploy.Install)
	if err != nil {
		return nil, fmt.Errorf("reading the embedded install: %w", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
			return nil, fmt.Errorf("reading the embedded CRD %s: %w", obj.GetName(), err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// checkCRD compares the live CRD with this version's: installed, Established,
// and serving each version with the same schema.
func checkCRD(want, live *apiextensionsv1.CustomResourceDefinition, found bool) checkResult {
	name := fmt.Sprintf("the %s CRD (%s)", want.Spec.Names.Kind, want.Name)
	if !found {
		return checkFail("run tether install", "%s is not installed", name)
	}
	if !established(live) {
		return checkFail("see kubectl describe crd "+want.Name, "%s is not Established", name)
	}
	var served []string
	for _, v := range want.Spec.Versions {
		lv := crdVersion(live, v.Name)
		if lv == nil || !lv.Served {
			return checkFail("run tether install to upgrade it", "%s does not serve %s, which this version of tether (%s) uses", name, v.Name, version)
		}
		if !equality.Semantic.DeepEqual(v.Schema, lv.Schema) {
			return checkFail("run tether install to upgrade it, or use the tether CLI of the installed version", "%s serves %s with a schema other than this version's (tether %s)", name, v.Name, version)
		}
		served = append(served, v.Name)
	}
	return checkPass("%s serves %s with this version's schema", name, strings.Join(served, ", "))
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func crdVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// checkDeployment passes when the agent's Deployment is Available.
func checkDeployment(d *appsv1.Deployment) checkResult {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return checkPass("the agent Deployment %s/%s is available (%d of %d replicas ready)", d.Namespace, d.Name, d.Status.ReadyReplicas, want)
		}
	}
	return checkFail(fmt.Sprintf("see kubectl -n %s describe deployment %s, and its pods' events and logs", d.Namespace, d.Name),
		"the agent Deployment %s/%s is not available (%d of %d replicas ready)", d.Namespace, d.Name, d.Status.ReadyReplicas, want)
}

// checkLeader passes when a replica holds the leader Lease and renewed it
// within its duration, as of now.
func checkLeader(lease *coordinationv1.Lease, now time.Time) checkResult {
	name := agentNamespace + "/" + leaderLeaseName()
	todo := fmt.Sprintf("the agent is not running or cannot reach the API server; see kubectl -n %s logs deployment/%s", agentNamespace, agentDeployment)
	if lease == nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return checkFail(todo, "no replica holds the leader Lease %s", name)
	}
	holder := *lease.Spec.HolderIdentity
	if lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return checkFail(todo, "the leader Lease %s, held by %s, has never been renewed", name, holder)
	}
	since := now.Sub(lease.Spec.RenewTime.Time).Round(time.Second)
	if since > time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second {
		return checkFail(todo, "the leader Lease %s has expired (%s renewed it %s ago)", name, holder, since)
	}
	return checkPass("%s leads (Lease %s renewed %s ago)", holder, name, max(since, 0))
}

// checkMetricsEndpoints passes when the agent's Service has a ready endpoint
// serving its metrics port: what a scraper (through the Service or a
// ServiceMonitor) reaches.
func checkMetricsEndpoints(slices []discoveryv1.EndpointSlice) checkResult {
	ready := 0
	for _, s := range slices {
		if !sliceServes(s, metricsPortName) {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				ready++
			}
		}
	}
	name := agentNamespace + "/" + agentService
	if ready == 0 {
		return checkFail(fmt.Sprintf("a scraper cannot reach the agent's metrics; see kubectl -n %s get endpointslices -l %s=%s", agentNamespace, discoveryv1.LabelServiceName, agentService),
			"the Service %s has no ready endpoint for its port %s", name, metricsPortName)
	}
	return checkPass("the Service %s has %d ready endpoints for its port %s", name, ready, metricsPortName)
}

func sliceServes(s discoveryv1.EndpointSlice, port string) bool {
	for _, p := range s.Ports {
		if p.Name != nil && *p.Name == port {
			return true
		}
	}
	return false
}

// agentImage is the image of the agent's container.
func agentImage(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "controller" {
			return c.Image
		}
	}
	if len(d.Spec.Template.Spec.Containers) > 0 {
		return d.Spec.Template.Spec.Containers[0].Image
	}
	return ""
}

// checkSkew compares the CLI's version with the tag of the agent's image: a
// difference is a warning, as is a version that cannot be compared.
func checkSkew(cli, image string) checkResult {
	tag := ""
	if repo := imageRepository(image); repo != image && !strings.HasPrefix(image[len(repo):], "@") {
		tag = strings.TrimPrefix(image[len(repo):], ":")
		tag, _, _ = strings.Cut(tag, "@")
	}
	switch {
	case tag == "":
		return checkWarn("compare it with this CLI's version ("+cli+") yourself", "the agent runs %s, whose version has no tag to compare", image)
	case cli == "dev":
		return checkWarn("use a released tether to compare versions", "the agent runs %s, and this CLI is a development build", tag)
	case tag != cli:
		return checkWarn("run tether install with this CLI to upgrade the agent, or use the CLI of the agent's version", "the agent runs %s and this CLI is %s", tag, cli)
	}
	return checkPass("the agent runs %s, as this CLI", tag)
}
