package chartrepo

import "testing"

func TestTheNextPageOfATagListStaysOnTheRegistry(t *testing.T) {
	const current = "http://127.0.0.1:5000/v2/charts/web/tags/list"
	for link, want := range map[string]string{
		"": "",
		`</v2/charts/web/tags/list?last=1.0.0&n=1>; rel="next"`: "http://127.0.0.1:5000/v2/charts/web/tags/list?last=1.0.0&n=1",
		`</v2/charts/web/tags/list?last=1.0.0&n=1>; rel="prev"`: "",
		`<http://evil.example.com/v2/x/tags/list>; rel="next"`:  "error",
		`/v2/charts/web/tags/list?last=1.0.0; rel="next"`:       "error",
	} {
		got, err := nextTagPage(current, link)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("nextTagPage(%s) = %s (%v); want %s", link, got, err, want)
		}
	}
}

func TestAnOCIRepositoryAppendsTheChartsName(t *testing.T) {
	for repository, want := range map[string]ociRef{
		"oci://ghcr.io/stefanprodan/charts": {base: "https://ghcr.io", repo: "stefanprodan/charts/web"},
		"oci://127.0.0.1:5000/":             {base: "http://127.0.0.1:5000", repo: "web"},
		"oci://localhost:5000/a/b":          {base: "http://localhost:5000", repo: "a/b/web"},
		"oci://[::1]:5000/x":                {base: "http://[::1]:5000", repo: "x/web"},
	} {
		got, err := parseOCIRef(repository, "web")
		if err != nil || got != want {
			t.Errorf("parseOCIRef(%s) = %+v (%v); want %+v", repository, got, err, want)
		}
	}
}
