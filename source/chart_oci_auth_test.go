package source_test

import (
	"strings"
	"testing"
	"time"

	"tether.dev/tether/source"
	"tether.dev/tether/test/chartrepo"
	"tether.dev/tether/test/ociregistry"
)

func TestAnOCIRegistryGivesATokenForCredentialsAndItsRefusalIsNeverQuoted(t *testing.T) {
	reg := ociregistry.Start(t)
	reg.Push(t, "webapp", "1.0.0", chartrepo.Package(t, chartrepo.Chart(t, "webapp"), "1.0.0"))
	reg.RequireToken("reader", "s3cret-password")
	src := newSource(t, source.Options{})
	for _, auth := range []source.Auth{{}, {Username: "reader", Password: "wrong-password"}} {
		_, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: reg.Repository, Name: "webapp", Auth: auth})
		checkChartFailure(t, err, source.ReasonAuthenticationFailed, "HTTP 401 Unauthorized")
		if err != nil && (strings.Contains(err.Error(), "registry-refusal") || strings.Contains(err.Error(), "password")) {
			t.Errorf("error %q quotes the answer or a credential", err)
		}
	}
	right := source.ChartRequest{Repository: reg.Repository, Name: "webapp", MaxAge: time.Hour, Auth: source.Auth{Username: "reader", Password: "s3cret-password"}}
	rev, err := src.FetchChart(t.Context(), right)
	if err != nil || rev.Ref != "webapp@1.0.0" {
		t.Fatalf("with its credentials: %s, %v", rev.Ref, err)
	}
	tokens := reg.Requests("token")
	src.Refresh(reg.Repository)
	if _, err := src.FetchChart(t.Context(), right); err != nil {
		t.Fatal(err)
	}
	if n := reg.Requests("token"); n != tokens {
		t.Errorf("the token server was asked %d more times; want none (the token is kept until it expires)", n-tokens)
	}
}
