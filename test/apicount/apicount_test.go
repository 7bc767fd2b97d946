package apicount

import (
	"net/http"
	"net/url"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := map[string]struct{ method, url string }{
		Get:    {http.MethodGet, "/api/v1/namespaces/web/configmaps/settings"},
		List:   {http.MethodGet, "/apis/apps/v1/namespaces/web/deployments"},
		Watch:  {http.MethodGet, "/api/v1/configmaps?watch=true"},
		DryRun: {http.MethodPatch, "/apis/apps/v1/namespaces/web/deployments/web?dryRun=All&fieldManager=tether"},
		Patch:  {http.MethodPatch, "/apis/apps/v1/namespaces/web/deployments/web?fieldManager=tether"},
		Create: {http.MethodPost, "/api/v1/namespaces"},
		Delete: {http.MethodDelete, "/api/v1/namespaces/web"},
	}
	cases["get "] = struct{ method, url string }{http.MethodGet, "/api/v1/namespaces/web"}
	// Discovery of a group version is not a read of an object.
	cases["list "] = struct{ method, url string }{http.MethodGet, "/api/v1"}
	cases["list  "] = struct{ method, url string }{http.MethodGet, "/apis/apps/v1"}
	for want, tc := range cases {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		got := classify(&http.Request{Method: tc.method, URL: u})
		switch want {
		case "get ":
			want = Get
		case "list ", "list  ":
			want = List
		}
		if got != want {
			t.Errorf("%s %s = %s, want %s", tc.method, tc.url, got, want)
		}
	}
}
