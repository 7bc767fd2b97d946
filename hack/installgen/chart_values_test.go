package main

import (
	"strings"
	"testing"

	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/source"
)

// chartPath is deploy/chart from this package.
const chartPath = "../../deploy/chart"

// TestEveryDocumentedValue lints the chart with Helm's linter (helm lint, in
// process) and renders it with Tether's Helm support (helm template's engine)
// for each value docs/install.md documents, and finds the value where it
// belongs in the agent's Deployment or ServiceAccount. Maps merge into the
// defaults (as Helm merges values); lists replace them.
func TestEveryDocumentedValue(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		path         []string // in the Deployment, or the ServiceAccount if it starts with "sa"
		want         string   // the field as YAML
	}{
		{"at the defaults", `{}`, []string{"spec", "template", "spec", "nodeSelector"}, "kubernetes.io/os: linux\n"},
		{"a nodeSelector merges into the default", `{nodeSelector: {disktype: ssd}}`,
			[]string{"spec", "template", "spec", "nodeSelector"}, "disktype: ssd\nkubernetes.io/os: linux\n"},
		{"tolerations", `{tolerations: [{key: dedicated, operator: Equal, value: gitops, effect: NoSchedule}]}`,
			[]string{"spec", "template", "spec", "tolerations"}, "- effect: NoSchedule\n  key: dedicated\n  operator: Equal\n  value: gitops\n"},
		{"affinity", `{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [ops]}]}]}}}}`,
			[]string{"spec", "template", "spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"},
			"- matchExpressions:\n  - key: pool\n    operator: In\n    values:\n    - ops\n"},
		{"topology spread replaced", `{topologySpreadConstraints: [{maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app.kubernetes.io/name: tether}}}]}`,
			[]string{"spec", "template", "spec", "topologySpreadConstraints"},
			"- labelSelector:\n    matchLabels:\n      app.kubernetes.io/name: tether\n  maxSkew: 2\n  topologyKey: zone\n  whenUnsatisfiable: DoNotSchedule\n"},
		{"topology spread turned off", `{topologySpreadConstraints: []}`, []string{"spec", "template", "spec", "topologySpreadConstraints"}, "null\n"},
		{"a priority class", `{priorityClassName: system-cluster-critical}`, []string{"spec", "template", "spec", "priorityClassName"}, "system-cluster-critical\n"},
		{"pod annotations", `{podAnnotations: {sidecar.istio.io/inject: "false"}}`, []string{"spec", "template", "metadata", "annotations"},
			"kubectl.kubernetes.io/default-container: controller\nsidecar.istio.io/inject: \"false\"\n"},
		{"workload identity on the ServiceAccount", `{serviceAccount: {annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::1:role/tether"}}}`,
			[]string{"sa", "metadata", "annotations"}, "eks.amazonaws.com/role-arn: arn:aws:iam::1:role/tether\ntether.dev/prune: disabled\n"},
		{"extra args after the built-in ones", `{extraArgs: ["--concurrency=8"]}`, []string{"spec", "template", "spec", "containers", "0", "args", "-1"}, "--concurrency=8\n"},
		{"extra env after the built-in ones", `{extraEnv: [{name: HTTPS_PROXY, value: "http://proxy:3128"}]}`,
			[]string{"spec", "template", "spec", "containers", "0", "env", "-1"}, "name: HTTPS_PROXY\nvalue: http://proxy:3128\n"},
		{"resources", `{resources: {limits: {memory: 1Gi}}}`, []string{"spec", "template", "spec", "containers", "0", "resources", "limits"}, "cpu: \"1\"\nmemory: 1Gi\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := valuesOf(t, tc.values)
			if msgs := lintErrors(chartPath, values); len(msgs) > 0 {
				t.Errorf("helm lint: %s", strings.Join(msgs, "; "))
			}
			got := renderChart(t, chartPath, source.Helm{ReleaseName: "tether", Namespace: installNamespace, Values: jsonOf(t, tc.values)})
			obj, path := got["Deployment/"+installNamespace+"/tether"], tc.path
			if path[0] == "sa" {
				obj, path = got["ServiceAccount/"+installNamespace+"/tether"], path[1:]
			}
			field, err := yaml.Marshal(lookup(obj, path))
			if err != nil {
				t.Fatal(err)
			}
			if string(field) != tc.want {
				t.Errorf("%s is\n%s\nwant\n%s", strings.Join(tc.path, "."), field, tc.want)
			}
		})
	}
}

// TestTheChartRefusesATypo validates a misspelt value as helm install and helm
// template do (Helm's schema validation) and lints it: both refuse it by name,
// where without values.schema.json Helm would ignore it and install the
// defaults. (Tether's own render of a chart from git skips the schema:
// source/render_helm.go.)
func TestTheChartRefusesATypo(t *testing.T) {
	ch, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	for values, name := range map[string]string{
		`{nodeSelecter: {disktype: ssd}}`:        "nodeSelecter",
		`{image: {tags: v1.2.3}}`:                "tags",
		`{serviceAccount: {annotation: {a: b}}}`: "annotation",
		`{replicaCount: two}`:                    "replicaCount",
		`{ui: {enable: true}}`:                   "enable",
		`{namespaced: {tenants: [Team_A]}}`:      "tenants",
		`{monitoring: {serviceMonitors: {}}}`:    "serviceMonitors",
	} {
		vals, err := commonutil.CoalesceValues(ch, valuesOf(t, values))
		if err != nil {
			t.Fatal(err)
		}
		if err := commonutil.ValidateAgainstSchema(ch, vals); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("validating %s: error %v, want a refusal naming %s", values, err, name)
		}
		if msgs := lintErrors(chartPath, valuesOf(t, values)); len(msgs) == 0 {
			t.Errorf("helm lint with %s found nothing wrong", values)
		}
	}
}

func valuesOf(t *testing.T, values string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(values), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// lintErrors are helm lint's errors for the chart at dir with values.
func lintErrors(dir string, values map[string]any) []string {
	var msgs []string
	for _, m := range lint.RunAll(dir, values, installNamespace).Messages {
		if m.Severity >= support.ErrorSev {
			msgs = append(msgs, m.Error())
		}
	}
	return msgs
}

// lookup walks path through maps and lists ("-1": the last item).
func lookup(obj any, path []string) any {
	for _, p := range path {
		switch o := obj.(type) {
		case map[string]any:
			obj = o[p]
		case []any:
			if len(o) == 0 {
				return nil
			}
			i := len(o) - 1
			if p != "-1" {
				i = int(p[0] - '0')
			}
			obj = o[i]
		default:
			return nil
		}
	}
	return obj
}
