package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/apply"
	"tether.dev/tether/deploy"
)

// forTenants turns the embedded namespaced install, written for the example
// tenants team-a and team-b, into the install for tenants: the objects of the
// template tenant's namespace once per tenant, the other example tenant's left
// out, and the agent's --watch-namespaces and the FlowSchema's tenant accounts
// naming tenants. An object that still names an example tenant afterwards is
// an error: the embedded manifests changed in a way this rewrite does not know.
func forTenants(objs []*unstructured.Unstructured, tenants []string) ([]*unstructured.Unstructured, error) {
	for _, t := range tenants {
		if errs := validation.IsDNS1123Label(t); len(errs) > 0 {
			return nil, fmt.Errorf("--tenants: %q is not a namespace name: %s", t, strings.Join(errs, "; "))
		}
	}
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		switch obj.GetNamespace() {
		case deploy.NamespacedOtherTenant:
			continue
		case deploy.NamespacedTemplateTenant:
			for _, t := range tenants {
				out = append(out, inTenant(obj, t))
			}
			continue
		}
		switch obj.GetKind() {
		case "Deployment":
			watchTenants(obj, tenants)
		case "FlowSchema":
			if err := tenantSubjects(obj, tenants); err != nil {
				return nil, err
			}
		}
		out = append(out, obj)
	}
	for _, obj := range out {
		if err := namesNoExampleTenant(obj, tenants); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// inTenant is a copy of the template tenant's obj in namespace tenant, its
// RoleBinding subjects in the template's namespace moved with it.
func inTenant(obj *unstructured.Unstructured, tenant string) *unstructured.Unstructured {
	c := obj.DeepCopy()
	c.SetNamespace(tenant)
	subjects, _, _ := unstructured.NestedSlice(c.Object, "subjects")
	for _, s := range subjects {
		if s, ok := s.(map[string]any); ok && s["namespace"] == deploy.NamespacedTemplateTenant {
			s["namespace"] = tenant
		}
	}
	if subjects != nil {
		_ = unstructured.SetNestedSlice(c.Object, subjects, "subjects")
	}
	return c
}

// watchTenants makes the agent's --watch-namespaces argument name tenants.
func watchTenants(obj *unstructured.Unstructured, tenants []string) {
	path := []string{"spec", "template", "spec", "containers"}
	containers, _, _ := unstructured.NestedSlice(obj.Object, path...)
	for _, c := range containers {
		c, ok := c.(map[string]any)
		if !ok {
			continue
		}
		args, _ := c["args"].([]any)
		for i, a := range args {
			if s, _ := a.(string); strings.HasPrefix(s, "--watch-namespaces=") {
				args[i] = "--watch-namespaces=" + strings.Join(tenants, ",")
			}
		}
	}
	if containers != nil {
		_ = unstructured.SetNestedSlice(obj.Object, containers, path...)
	}
}

// tenantSubjects makes the FlowSchema's subjects list the tenants' accounts in
// place of the example tenants'.
func tenantSubjects(obj *unstructured.Unstructured, tenants []string) error {
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	for i, r := range rules {
		r, ok := r.(map[string]any)
		if !ok {
			continue
		}
		subjects, _ := r["subjects"].([]any)
		var account map[string]any
		kept := slices.DeleteFunc(slices.Clone(subjects), func(s any) bool {
			sa, _, _ := unstructured.NestedMap(asMap(s), "serviceAccount")
			if ns := sa["namespace"]; ns == deploy.NamespacedTemplateTenant || ns == deploy.NamespacedOtherTenant {
				account = sa
				return true
			}
			return false
		})
		if account != nil {
			for _, t := range tenants {
				kept = append(kept, map[string]any{"kind": "ServiceAccount", "serviceAccount": map[string]any{"namespace": t, "name": account["name"]}})
			}
		}
		r["subjects"] = kept
		rules[i] = r
	}
	if rules == nil {
		return nil
	}
	if err := unstructured.SetNestedSlice(obj.Object, rules, "spec", "rules"); err != nil {
		return fmt.Errorf("%s: %w", describeRef(apply.RefOf(obj)), err)
	}
	return nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// namesNoExampleTenant fails when obj still names an example tenant that is not
// one of tenants.
func namesNoExampleTenant(obj *unstructured.Unstructured, tenants []string) error {
	text, err := yaml.Marshal(obj.Object)
	if err != nil {
		return err
	}
	for _, example := range []string{deploy.NamespacedTemplateTenant, deploy.NamespacedOtherTenant} {
		if !slices.Contains(tenants, example) && strings.Contains(string(text), example) {
			return fmt.Errorf("the embedded namespaced install names the example tenant %s in %s, which tether install cannot replace: install from a copy of deploy/overlays/namespaced (docs/multi-tenancy.md)", example, describeRef(apply.RefOf(obj)))
		}
	}
	return nil
}
