package git

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many redirects an HTTP conversation outside git follows
// (chart repositories, OCI registries), as net/http does by default.
const maxRedirects = 10

// CredentialsToOneOrigin is the redirect policy of the HTTP clients of chart
// repositories and OCI registries: a redirect keeps the first request's
// Authorization only when it stays on the same scheme, host and port. net/http
// alone keeps it for any port and scheme of the same host name
// (http://host:8080 would get what https://host was given). net/http copies
// the first request's headers again at each hop, so a redirect back to the
// origin gets them again, and only then.
func CredentialsToOneOrigin(r *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	first := via[0].URL
	if !strings.EqualFold(r.URL.Scheme, first.Scheme) || !strings.EqualFold(r.URL.Host, first.Host) {
		r.Header.Del("Authorization")
	}
	return nil
}

// WithoutURL takes the URL out of net/http's error (it may carry a query
// string with a token): the caller's error names what was read already.
func WithoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
