package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// flowControl is the name of the install's PriorityLevelConfiguration and
// FlowSchema (deploy/base/flowcontrol.yaml).
const flowControl = "tether"

// priorityLevelHeader is the response header in which the API server says which
// priority level it classified a request under (by the level's UID).
const priorityLevelHeader = "X-Kubernetes-PF-PriorityLevel-UID"

// waitFlowControl waits until the API server classifies a request made as each
// ServiceAccount the install's FlowSchema names under the install's priority level,
// and returns that level's UID.
//
// It waits for the classification itself, not for the schema's Dangling condition:
// the API server's flow-control controller writes that condition at most five times
// a minute per schema name and puts off the rest for 30 to 75 seconds, and the e2e
// tests install and remove the schema "tether" many times a minute, while the
// classification follows each object as soon as the API server's informer sees it.
func waitFlowControl(t *testing.T, c client.Client) string {
	t.Helper()
	schema := flowControlObject("FlowSchema")
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Name: flowControl}, schema))
	accounts := schemaAccounts(schema)
	if len(accounts) == 0 {
		t.Fatalf("FlowSchema %s names no ServiceAccount", flowControl)
	}
	cfg := controlplane.Shared(t).Config()
	level := flowControlObject("PriorityLevelConfiguration")
	harness.Eventually(t, waitTimeout, "the API server to classify the requests of "+fmt.Sprint(accounts)+" under priority level "+flowControl, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: flowControl}, level); err != nil {
			return false, err
		}
		for _, account := range accounts {
			got, err := classifiedUnder(ctx, cfg, account)
			if err != nil {
				return false, err
			}
			if got != string(level.GetUID()) {
				return false, fmt.Errorf("a request as %s was classified under priority level %q, not %s's (%s)", account, got, flowControl, level.GetUID())
			}
		}
		return true, nil
	})
	return string(level.GetUID())
}

// schemaAccounts returns the user names of the ServiceAccounts a FlowSchema's rules
// name as subjects.
func schemaAccounts(schema *unstructured.Unstructured) []string {
	var users []string
	rules, _, _ := unstructured.NestedSlice(schema.Object, "spec", "rules")
	for _, rule := range rules {
		subjects, _, _ := unstructured.NestedSlice(rule.(map[string]any), "subjects")
		for _, subject := range subjects {
			name, _, _ := unstructured.NestedString(subject.(map[string]any), "serviceAccount", "name")
			namespace, _, _ := unstructured.NestedString(subject.(map[string]any), "serviceAccount", "namespace")
			if name != "" && namespace != "" {
				users = append(users, "system:serviceaccount:"+namespace+":"+name)
			}
		}
	}
	return users
}

// classifiedUnder makes one request as user (the admin impersonating it) and returns
// the UID of the priority level the API server classified it under. The request's
// own answer does not matter: flow control classifies it before authorization, so a
// refusal carries the header too.
func classifiedUnder(ctx context.Context, admin *rest.Config, user string) (string, error) {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/namespaces/"+agentNamespace, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	return resp.Header.Get(priorityLevelHeader), nil
}

func flowControlObject(kind string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("flowcontrol.apiserver.k8s.io/v1")
	obj.SetKind(kind)
	return obj
}

// checkPriorityLevel fails the test unless the proxy saw requests that match
// (what names them) and the API server classified every one of them under the
// priority level whose UID is level.
func checkPriorityLevel(t *testing.T, aud *auditor, level, what string, match func(apiRequest) bool) {
	t.Helper()
	seen := 0
	for _, r := range aud.requests() {
		if !match(r) {
			continue
		}
		seen++
		if r.priorityLevel != level {
			t.Errorf("%s %s %s/%s (as %q) was classified under priority level %q; want %s's (%s)", r.verb, r.resource, r.namespace, r.name, r.as, r.priorityLevel, flowControl, level)
		}
	}
	if seen == 0 {
		t.Errorf("no request of %s went through the proxy", what)
	}
}
