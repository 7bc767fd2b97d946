package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// usedElsewhere are rights the agent needs in situations these tests do not make.
var usedElsewhere = map[string]string{
	"get syncs":                   "a status write that meets a conflict re-reads the Sync from the API server",
	"create tokenreviews":         "--metrics-secure checks each scrape's token; the tests scrape in plain HTTP",
	"create subjectaccessreviews": "--metrics-secure checks each scraper's right to GET /metrics; the tests scrape in plain HTTP",
	"get namespaces":              "a Sync being deleted whose account is gone reads its namespace, to let go when the namespace is being deleted",
	"patch syncsets/status":       "SyncSets (sync/syncset) write their status; the install tests make no SyncSet",
	"patch notifiers/status":      "a Notifier's readiness and last delivery; the install tests make no Notifier",
	"create syncs":                "a SyncSet creates its Syncs; the install tests make no SyncSet",
	"update syncs":                "a SyncSet reverts a hand edit of a Sync it made; the install tests make no SyncSet",
	"delete syncs":                "a SyncSet deletes the Syncs its generators no longer yield; the install tests make no SyncSet",
}

// checkAgentRights fails t with every problem agentRightsProblems finds.
func checkAgentRights(t *testing.T, in *install, aud *auditor, a *agent, tenantUser string) {
	t.Helper()
	a.running(t)
	for _, p := range agentRightsProblems(t, in, aud, a, tenantUser) {
		t.Error(p)
	}
}

// agentRightsProblems names each request of the agent's own (not as another
// account) that the API server refused, each refusal in its log other than a tenant
// account's, and each right the install grants it that went unused.
func agentRightsProblems(t *testing.T, in *install, aud *auditor, a *agent, tenantUser string) []string {
	t.Helper()
	var out []string
	for _, r := range aud.refusedOwn() {
		if r.resource == "events" && terminating(t, r.namespace) {
			// Not RBAC's refusal: a namespace being deleted takes no new content. The
			// shared control plane keeps earlier tests' namespaces Terminating (no
			// namespace controller); a Sync left in one fails for this agent and is
			// told so by a Warning Event.
			continue
		}
		out = append(out, fmt.Sprintf("the API server refused the agent: %s %s (%s)", r.verb, r.path, r.resource))
	}
	for _, line := range strings.Split(a.log.String(), "\n") {
		if strings.Contains(line, "because it is being terminated") {
			continue // the Events above, as the event recorder logs them
		}
		if strings.Contains(strings.ToLower(line), "forbidden") && !strings.Contains(line, tenantUser) {
			out = append(out, "the agent logged a refusal: "+line)
		}
	}
	for _, rule := range aud.unused(in.agentRules(t)) {
		if why, ok := usedElsewhere[rule.verb+" "+rule.resource]; ok {
			t.Logf("unused here: %s (%s)", rule, why)
			continue
		}
		out = append(out, fmt.Sprintf("the install grants the agent %s, which it never used", rule))
	}
	return out
}

// TestAMissingPermissionIsNamedByItsRequest shows that the rights check of the
// install tests fails when the install lacks a right the agent needs: with the
// events rule taken out of tether-controller, a Sync's first apply has its Event
// refused, and the check names that request. It uses the namespaced install: in the
// default one tether-applier grants the agent everything anyway.
func TestAMissingPermissionIsNamedByItsRequest(t *testing.T) {
	c := newClient(t)
	tenantNamespaces(t, c)
	in := applyInstall(t, "namespaced.yaml")
	kubectl(t, "patch", "clusterrole", "tether-controller", "--type=json",
		`-p=[{"op":"test","path":"/rules/2/resources","value":["events"]},{"op":"remove","path":"/rules/2"}]`)
	aud := startAuditor(t)
	ns := teamA
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "rights")
	rev := repo.Commit(t, map[string]string{"app/config.yaml": fmt.Sprintf(appConfig, "hello")}, "one config map")
	a := startAgentWith(t, agentKubeconfig(t, aud), in.agentArgs(t)...)
	s := gitSync(ns, "rights", repo.URL(), "app", time.Hour)
	createSync(t, c, s)
	waitRevision(t, c, s, rev)
	// The Applied event is recorded asynchronously after the status write: wait for
	// its refusal rather than for a while.
	harness.Eventually(t, waitTimeout, "the Event of the apply is refused", func(context.Context) (bool, error) {
		return slices.ContainsFunc(aud.refusedOwn(), func(r apiRequest) bool { return r.resource == "events" }), nil
	})
	problems := agentRightsProblems(t, in, aud, a, "no tenant")
	want := fmt.Sprintf("the API server refused the agent: create /api/v1/namespaces/%s/events (events)", ns)
	if !slices.Contains(problems, want) {
		t.Errorf("the rights check does not name the refused request %q; it found:\n%s", want, strings.Join(problems, "\n"))
	}
	harness.Must(t, c.Delete(t.Context(), s))
	waitGone(t, c, s)
}

// terminating reports whether namespace ns is being deleted (or is gone).
func terminating(t *testing.T, ns string) bool {
	t.Helper()
	c, err := kubernetes.NewForConfig(controlplane.Shared(t).Config())
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.Phase == corev1.NamespaceTerminating
}
