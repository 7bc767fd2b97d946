package chartrepo

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

func TestATagListOverTheVersionBoundIsRefusedAtTheBound(t *testing.T) {
	page := `{"name":"charts/webapp","tags":[` + strings.Repeat(`"",`, maxChartVersions) + `"1.0.0"]}`
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, page)
	}))
	defer registry.Close()
	rs, err := NewRepositories(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Repository: "oci://" + strings.TrimPrefix(registry.URL, "http://") + "/charts", Name: "webapp"}
	entries, err := rs.readTags(t.Context(), req)
	var fe *result.FetchError
	if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonRenderLimitExceeded || !strings.Contains(err.Error(), "more than 20000 tags") {
		t.Fatalf("a page of %d tags: %d kept, error %v; want refused at the bound, saying it", maxChartVersions+1, len(entries["webapp"]), err)
	}
	entries2 := tagEntries([]string{"1.0.0", "1.1.0_build.1"})
	if len(entries2) != 2 || entries2[1].Version != "1.1.0+build.1" || entries2[1].URLs[0] != "1.1.0_build.1" {
		t.Errorf("a page of two tags: %v; want both, _ read as +, the tag kept as the URL", entries2)
	}
}

func TestAnIndexKeepsOnlyTheAskedForChartWithinTheVersionBound(t *testing.T) {
	for name, text := range map[string]string{
		"helm's layout": helmIndex,
		"JSON": `{"entries":{"podinfo":[{"version":"6.14.1","urls":["podinfo-6.14.1.tgz"],"digest":"aaaa"}],` +
			`"web-app":[{"version":"1.0.0","urls":["web-app-1.0.0.tgz"]}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			idx, err := parseIndex([]byte(text), DefaultOptions().MaxYAMLNodesPerFile, "web-app")
			if err != nil || len(idx) != 1 || len(idx["web-app"]) != 1 {
				t.Errorf("index kept %v (%v); want web-app's one version alone", idx, err)
			}
		})
	}
	bomb := `{"entries":{"webapp":[` + strings.Repeat(`{},`, maxChartVersions) + `{}]}}`
	if _, err := parseIndex([]byte(bomb), DefaultOptions().MaxYAMLNodesPerFile, "webapp"); err == nil || !strings.Contains(err.Error(), "more than 20000 versions") {
		t.Errorf("a JSON index of %d empty entries of the chart: %v; want refused at the bound", maxChartVersions+1, err)
	}
	var yamlBomb strings.Builder
	yamlBomb.WriteString("entries:\n  webapp:\n")
	for range maxChartVersions + 1 {
		yamlBomb.WriteString("  - {}\n")
	}
	if _, err := parseIndex([]byte(yamlBomb.String()), 1<<20, "webapp"); err == nil || !strings.Contains(err.Error(), "more than 20000 versions") {
		t.Errorf("a YAML index of %d empty entries of the chart: %v; want refused at the bound", maxChartVersions+1, err)
	}
}
