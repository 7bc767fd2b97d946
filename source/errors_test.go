package source_test

import (
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

func TestFetchRefusesAURLWithCredentialsThatDoesNotParse(t *testing.T) {
	src := newSource(t, source.Options{})
	for _, password := range []string{"50%off", "pa#ss", "pa ss", "pa/ss"} {
		t.Run("a password holding "+password, func(t *testing.T) {
			_, err := src.Fetch(t.Context(), source.Request{
				URL: "https://user:" + password + "@127.0.0.1:1/deploy.git",
				Ref: v1alpha1.GitRef{Branch: "main"},
			})
			if reason := fetchReason(t, err); reason != source.ReasonUnsupportedURL {
				t.Errorf("reason = %s, want %s (error %v)", reason, source.ReasonUnsupportedURL, err)
			}
			if msg := err.Error(); strings.Contains(msg, password) || strings.Contains(msg, "user:") {
				t.Errorf("the message shows the credentials: %s", msg)
			}
		})
	}
}
