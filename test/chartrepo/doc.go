// Package chartrepo runs a Helm chart repository on loopback for Tether's tests.
//
// A Server is an httptest server on 127.0.0.1 that serves index.yaml and chart
// packages, as any static chart repository (GitHub Pages, a bucket) does. Its
// packages are made by the Helm SDK's own packager (chartutil.Save) from chart
// directories the tests write (testdata/), and its index lists them with their
// SHA-256 digests as `helm repo index` writes them. A test can publish a new
// version while the server runs, require basic authentication (a refusal
// carries a body that must never be quoted), serve a raw index or package of
// its own making (hostile cases), and count the requests of each path, to
// prove that the agent asks cheaply.
//
// Usage:
//
//	repo := chartrepo.Start(t, chartrepo.Options{})
//	repo.Publish(t, chartrepo.Chart(t, "webapp"), "1.0.0")
//	// point a Sync's spec.source.chart at repo.URL, name "webapp"
//	repo.Requests("/index.yaml")
package chartrepo
