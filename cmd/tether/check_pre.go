package main

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
)

// checkReachable asks the API server its version, and returns it.
func checkReachable(cs kubernetes.Interface, host string) (checkResult, string) {
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return checkFail("check --kubeconfig and --context, and that the cluster is up", "the API server at %s does not answer (%v)", host, err), ""
	}
	return checkPass("the API server at %s answers (Kubernetes %s)", host, info.GitVersion), info.GitVersion
}

// checkServerVersion compares the cluster's version with least, the oldest
// the install supports.
func checkServerVersion(gitVersion, least string) checkResult {
	have, err := utilversion.ParseGeneric(gitVersion)
	if err != nil {
		return checkFail("check that this is a Kubernetes API server", "the cluster's version %q cannot be read (%v)", gitVersion, err)
	}
	if have.LessThan(utilversion.MustParseGeneric(least)) {
		return checkFail("upgrade the cluster, or install an older Tether", "Kubernetes %s is older than %s, which the install needs", gitVersion, least)
	}
	return checkPass("Kubernetes %s is at least %s, which the install needs", gitVersion, least)
}

// installRight is one thing the install creates, to ask the API server
// whether the user may.
type installRight struct {
	group, resource, namespace string
}

// installRights are what the install creates: cluster-scoped kinds, and the
// agent's Deployment in its namespace.
func installRights(namespaced bool) []installRight {
	rights := []installRight{
		{"apiextensions.k8s.io", "customresourcedefinitions", ""},
		{"", "namespaces", ""},
		{"rbac.authorization.k8s.io", "clusterroles", ""},
		{"rbac.authorization.k8s.io", "clusterrolebindings", ""},
		{"flowcontrol.apiserver.k8s.io", "flowschemas", ""},
		{"apps", "deployments", agentNamespace},
	}
	if namespaced {
		rights = append(rights,
			installRight{"admissionregistration.k8s.io", "validatingadmissionpolicies", ""},
			installRight{"admissionregistration.k8s.io", "validatingadmissionpolicybindings", ""})
	}
	return rights
}

// checkInstallRights asks, one SelfSubjectAccessReview per kind, whether the
// user may create what the install creates: one line when every answer is
// yes, one per refusal otherwise.
func checkInstallRights(ctx context.Context, cs kubernetes.Interface, namespaced bool) []checkResult {
	var refused []checkResult
	for _, r := range installRights(namespaced) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: r.group, Resource: r.resource, Namespace: r.namespace},
		}}
		answer, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		what := r.resource
		if r.group != "" {
			what += "." + r.group
		}
		switch {
		case err != nil:
			refused = append(refused, checkFail("check your credentials", "cannot ask whether you may create %s (%v)", what, err))
		case !answer.Status.Allowed:
			refused = append(refused, checkFail("the install needs cluster-admin rights; ask your cluster's administrators", "you may not create %s", what))
		}
	}
	if len(refused) > 0 {
		return refused
	}
	return []checkResult{checkPass("you may create what the install creates (CRDs, Namespaces, ClusterRoles and their bindings, FlowSchemas, Deployments in %s)", agentNamespace)}
}
