package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// chartParts are the installs beside deploy/default that the chart's values
// turn on: the web UI (deploy/ui), the Prometheus Operator's objects and the
// Grafana dashboard (deploy/monitoring), and the namespaced, multi-tenant
// install (deploy/overlays/namespaced). The chart is generated from their
// renders, so that, with a part turned on, it renders that install's objects
// (TestTheChartRendersEachInstall).
type chartParts struct {
	ui, monitoring, namespaced resmap.ResMap
}

// Directories of the parts, under the checkout's root.
const (
	uiDir         = "deploy/ui"
	monitoringDir = "deploy/monitoring"
	namespacedDir = "deploy/overlays/namespaced"
)

// Placeholders of what the namespaced install adds to objects deploy/default
// has: the agent's arguments and the FlowSchema's subjects.
const (
	namespacedArgsHolder     = "TETHER_CHART_NAMESPACED_ARGS"
	namespacedSubjectsHolder = "TETHER_CHART_NAMESPACED_SUBJECTS"
	monitoringLabelsHolder   = "TETHER_CHART_MONITORING_LABELS"
)

// The values that turn the parts on.
const (
	namespacedOn = ".Values.namespaced.enabled"
	uiOn         = ".Values.ui.enabled"
)

// monitoringSwitches maps each kind deploy/monitoring renders to the value that
// turns it on.
var monitoringSwitches = map[string]string{
	"ServiceMonitor": ".Values.monitoring.serviceMonitor.enabled",
	"PrometheusRule": ".Values.monitoring.prometheusRule.enabled",
	"ConfigMap":      ".Values.monitoring.dashboard.enabled",
}

// namespacedAdds is what the namespaced install adds to deploy/default, read
// from the two renders: the agent's arguments after the default ones, the
// FlowSchema's subjects after the default ones (one a tenant), the tenants'
// own objects (those of the first tenant, which stand for each), and the
// objects it adds outside the tenants.
type namespacedAdds struct {
	tenants        []string
	args           []string
	subjects       []string // the FlowSchema's added subjects, as YAML, one a tenant
	tenantObjects  []*resource.Resource
	clusterObjects []*resource.Resource
	// removed are the identities of deploy/default's objects it deletes.
	removed map[string]bool
}

// identity names an object by kind, namespace and name.
func identity(r *resource.Resource) string {
	return r.GetKind() + "/" + r.GetNamespace() + "/" + r.GetName()
}

// isFlowSchema reports whether r is the agent's FlowSchema.
func isFlowSchema(r *resource.Resource) bool {
	return r.GetKind() == "FlowSchema" && r.GetName() == "tether"
}

// readNamespaced compares the namespaced install with deploy/default and says
// what it adds, refusing a change the chart has no template for.
func readNamespaced(install, namespaced resmap.ResMap) (*namespacedAdds, error) {
	base := map[string]*resource.Resource{}
	for _, r := range install.Resources() {
		base[identity(r)] = r
	}
	adds := &namespacedAdds{removed: map[string]bool{}}
	kept := map[string]bool{}
	tenantsSeen := map[string]bool{}
	for _, r := range namespaced.Resources() {
		id := identity(r)
		b, ok := base[id]
		switch {
		case ok:
			kept[id] = true
			if err := readChange(adds, b, r); err != nil {
				return nil, fmt.Errorf("%s %s: %w", r.GetKind(), r.GetName(), err)
			}
		case r.GetNamespace() != "" && r.GetNamespace() != installNamespace:
			tenantsSeen[r.GetNamespace()] = true
		default:
			adds.clusterObjects = append(adds.clusterObjects, r)
		}
	}
	for id := range base {
		if !kept[id] && !strings.HasPrefix(id, "Namespace/") {
			adds.removed[id] = true
		}
	}
	for t := range tenantsSeen {
		adds.tenants = append(adds.tenants, t)
	}
	slices.Sort(adds.tenants)
	if len(adds.tenants) == 0 {
		return nil, fmt.Errorf("%s binds no tenant namespace", namespacedDir)
	}
	return adds, readTenants(adds, namespaced)
}

// readChange reads what the namespaced install changes in b (as r): only the
// agent's arguments and the FlowSchema's subjects may grow.
func readChange(adds *namespacedAdds, b, r *resource.Resource) error {
	var path []string
	switch {
	case isAgent(r):
		path = []string{"spec", "template", "spec", "containers", "[name=controller]", "args"}
	case isFlowSchema(r):
		path = []string{"spec", "rules", "0", "subjects"}
	}
	var grown []*yaml.RNode
	if path != nil {
		before, after, err := listsAt(b, r, path)
		if err != nil {
			return err
		}
		if len(after) < len(before) {
			return fmt.Errorf("%s shrinks", strings.Join(path, "."))
		}
		grown = after[len(before):]
		// The rest must be the same: cut the grown items off a copy and compare.
		r = r.DeepCopy()
		list, _ := r.Pipe(yaml.Lookup(path...))
		list.YNode().Content = list.YNode().Content[:len(before)]
	}
	want, err := b.AsYAML()
	if err != nil {
		return err
	}
	got, err := r.AsYAML()
	if err != nil {
		return err
	}
	if string(want) != string(got) {
		return fmt.Errorf("the namespaced install changes it beyond what the chart templates (the agent's arguments, the FlowSchema's subjects)")
	}
	for _, item := range grown {
		if isAgent(b) {
			adds.args = append(adds.args, yaml.GetValue(item))
			continue
		}
		text, err := item.String()
		if err != nil {
			return err
		}
		adds.subjects = append(adds.subjects, text)
	}
	return nil
}

// listsAt returns the items of the list at path in b and in r.
func listsAt(b, r *resource.Resource, path []string) (before, after []*yaml.RNode, err error) {
	for _, o := range []struct {
		r     *resource.Resource
		items *[]*yaml.RNode
	}{{b, &before}, {r, &after}} {
		list, err := o.r.Pipe(yaml.Lookup(path...))
		if err != nil || list == nil {
			return nil, nil, fmt.Errorf("no %s", strings.Join(path, "."))
		}
		if *o.items, err = list.Elements(); err != nil {
			return nil, nil, err
		}
	}
	return before, after, nil
}

// readTenants keeps the first tenant's objects, which stand for every tenant's:
// each other tenant's must be the same, its name for the first's, and so must
// the FlowSchema's subjects.
func readTenants(adds *namespacedAdds, namespaced resmap.ResMap) error {
	first := adds.tenants[0]
	of := map[string][]string{}
	for _, r := range namespaced.Resources() {
		ns := r.GetNamespace()
		if !slices.Contains(adds.tenants, ns) {
			continue
		}
		body, err := r.AsYAML()
		if err != nil {
			return err
		}
		of[ns] = append(of[ns], strings.ReplaceAll(string(body), ns, first))
		if ns == first {
			adds.tenantObjects = append(adds.tenantObjects, r)
		}
	}
	for _, t := range adds.tenants[1:] {
		if !slices.Equal(of[t], of[first]) {
			return fmt.Errorf("%s binds tenant %s otherwise than tenant %s: the chart has one template for every tenant", namespacedDir, t, first)
		}
	}
	if len(adds.subjects) != len(adds.tenants) {
		return fmt.Errorf("%s adds %d subjects to the FlowSchema for %d tenants", namespacedDir, len(adds.subjects), len(adds.tenants))
	}
	for i, t := range adds.tenants {
		if strings.ReplaceAll(adds.subjects[i], t, first) != adds.subjects[0] {
			return fmt.Errorf("%s adds a FlowSchema subject for tenant %s otherwise than for %s", namespacedDir, t, first)
		}
	}
	for _, r := range adds.clusterObjects {
		body, err := r.AsYAML()
		if err != nil {
			return err
		}
		if strings.Contains(string(body), first) {
			return fmt.Errorf("%s %s names tenant %s outside the tenant's namespace: the chart cannot template it", r.GetKind(), r.GetName(), first)
		}
	}
	return nil
}

// argsTemplate is the agent's arguments the namespaced install adds,
// in place of the line "- HOLDER": the tenants' list, which the install spells
// out, is the value namespaced.tenants.
func (a *namespacedAdds) argsTemplate(_ string, indent int) string {
	pad := strings.Repeat(" ", indent)
	list := strings.Join(a.tenants, ",")
	var b strings.Builder
	fmt.Fprintf(&b, "{{- if %s }}\n", namespacedOn)
	fmt.Fprintf(&b, "{{- if not .Values.namespaced.tenants }}{{ fail \"namespaced.enabled needs namespaced.tenants: the namespaces of the tenants\" }}{{ end }}")
	for _, arg := range a.args {
		quoted := fmt.Sprintf("%q", arg)
		quoted = strings.ReplaceAll(quoted, list, `{{ join "," .Values.namespaced.tenants }}`)
		fmt.Fprintf(&b, "\n%s- %s", pad, quoted)
	}
	b.WriteString("\n{{- end }}")
	return b.String()
}

// subjectsTemplate is the FlowSchema subject the namespaced install adds for
// each tenant, in place of the line "- HOLDER".
func (a *namespacedAdds) subjectsTemplate(_ string, indent int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{{- if %s }}{{- range .Values.namespaced.tenants }}", namespacedOn)
	lines := strings.Split(strings.TrimSuffix(a.subjects[0], "\n"), "\n")
	for i, line := range lines {
		lead := "  "
		if i == 0 {
			lead = "- "
		}
		line = strings.ReplaceAll(line, a.tenants[0], "{{ . }}")
		fmt.Fprintf(&b, "\n%s%s%s", strings.Repeat(" ", indent), lead, line)
	}
	b.WriteString("\n{{- end }}{{- end }}")
	return b.String()
}

// guarded heads body with "if cond" and ends it; rendered with cond false,
// the file holds nothing but its header.
func guarded(cond, body string) string {
	return fmt.Sprintf("{{- if %s }}\n%s{{- end }}\n", cond, ensureNewline(body))
}

func ensureNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// escapeActions makes text that holds template actions of its own (the
// alerts' {{ $labels.name }}, the dashboard's legends) print as it is.
func escapeActions(text string) string {
	const open, closing = "\x00open\x00", "\x00close\x00"
	text = strings.ReplaceAll(text, "{{", open)
	text = strings.ReplaceAll(text, "}}", closing)
	text = strings.ReplaceAll(text, open, `{{ "{{" }}`)
	return strings.ReplaceAll(text, closing, `{{ "}}" }}`)
}

// partFiles are the chart's templates of the parts, by file name.
func partFiles(parts chartParts, adds *namespacedAdds, agentRef string) (map[string]string, error) {
	files := map[string]string{}
	for _, r := range parts.ui.Resources() {
		if r.GetKind() == "Namespace" {
			continue
		}
		text, err := partText(r, agentRef, false)
		if err != nil {
			return nil, err
		}
		files[partName("ui", r)] = guarded(uiOn, text)
	}
	for _, r := range parts.monitoring.Resources() {
		on, ok := monitoringSwitches[r.GetKind()]
		if !ok {
			return nil, fmt.Errorf("%s renders a %s, which no value turns on", monitoringDir, r.GetKind())
		}
		r = r.DeepCopy()
		if err := r.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata", "labels"), yaml.SetField(monitoringLabelsHolder, yaml.NewScalarRNode(monitoringLabelsHolder))); err != nil {
			return nil, err
		}
		text, err := partText(r, agentRef, true)
		if err != nil {
			return nil, err
		}
		if text, err = (chartTemplate{monitoringLabelsHolder, ".Values.monitoring.labels", itemsForm}).apply(text); err != nil {
			return nil, err
		}
		files[partName("monitoring", r)] = guarded(on, text)
	}
	for _, r := range adds.clusterObjects {
		text, err := partText(r, agentRef, false)
		if err != nil {
			return nil, err
		}
		files[partName("namespaced", r)] = guarded(namespacedOn, text)
	}
	for _, r := range adds.tenantObjects {
		text, err := partText(r, agentRef, false)
		if err != nil {
			return nil, err
		}
		text = strings.ReplaceAll(text, "{{ .Release.Namespace }}", "{{ $.Release.Namespace }}")
		text = strings.ReplaceAll(text, adds.tenants[0], "{{ $tenant }}")
		files[partName("tenant", r)] = fmt.Sprintf("{{- if %s }}{{- range $tenant := .Values.namespaced.tenants }}\n---\n%s{{- end }}{{- end }}\n", namespacedOn, ensureNewline(text))
	}
	return files, nil
}

// partText is r as a template: in the release's namespace, and naming the
// agent's image (agentRef, as deploy/default names it) as the values say
// where it runs it (the UI). With escape, r's own template actions print as
// they are; otherwise r may hold none.
func partText(r *resource.Resource, agentRef string, escape bool) (string, error) {
	body, err := r.AsYAML()
	if err != nil {
		return "", err
	}
	text := string(body)
	if escape {
		text = escapeActions(text)
	} else if strings.Contains(text, "{{") {
		return "", fmt.Errorf("%s %s holds {{, which a template would read as an action", r.GetKind(), r.GetName())
	}
	text = strings.ReplaceAll(text, "image: "+agentRef+"\n", "image: "+imageTemplate+"\n")
	return strings.ReplaceAll(text, installNamespace, "{{ .Release.Namespace }}"), nil
}

// partName is the template file of a part's object.
func partName(part string, r *resource.Resource) string {
	return filepath.Join("templates", strings.ToLower(part+"-"+r.GetKind()+"-"+r.GetName()+".yaml"))
}

// replaceLine swaps the line of holder in text for what template makes of the
// line and its indentation.
func replaceLine(text, holder string, template func(line string, indent int) string) (string, error) {
	i := strings.Index(text, holder)
	if i < 0 {
		return "", fmt.Errorf("no %s in the object", holder)
	}
	lineStart := strings.LastIndex(text[:i], "\n") + 1
	lineEnd := i + strings.Index(text[i:], "\n")
	line := text[lineStart:lineEnd]
	indent := len(line) - len(strings.TrimLeft(line, " "))
	return text[:lineStart] + template(line, indent) + text[lineEnd:], nil
}
