package rollout

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// metricsGroupVersion is the resource metrics API, which metrics-server serves and
// the autoscaler controller reads.
const metricsGroupVersion = "metrics.k8s.io/v1beta1"

// startMetricsAPI serves the resource metrics API in place of metrics-server, over
// TLS on a loopback port, for the real API server to reach through an APIService
// (an ExternalName Service naming localhost: the aggregator resolves it to that
// name and the APIService's port). Every running pod of the namespace asked about
// uses the memory usage(pod's labels) says, when it says ok; the others have no
// metrics, as pods metrics-server could not scrape. It is stopped when the test
// ends.
func startMetricsAPI(t *testing.T, c client.Client, usage func(podLabels map[string]string) (string, bool)) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/apis/"+metricsGroupVersion, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: metricsGroupVersion,
			APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: metav1.Verbs{"get", "list"}}},
		})
	})
	mux.HandleFunc("/apis/"+metricsGroupVersion+"/namespaces/{ns}/pods", func(w http.ResponseWriter, r *http.Request) {
		sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(podKind.GroupVersion().WithKind("PodList"))
		if err := c.List(r.Context(), list, client.InNamespace(r.PathValue("ns")), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		items := []any{}
		now := time.Now().UTC().Format(time.RFC3339)
		for _, pod := range list.Items {
			memory, ok := usage(pod.Labels)
			if !ok || pod.DeletionTimestamp != nil {
				continue
			}
			items = append(items, map[string]any{
				"metadata":   map[string]any{"name": pod.Name, "namespace": pod.Namespace},
				"timestamp":  now,
				"window":     "10s",
				"containers": []any{map[string]any{"name": "app", "usage": map[string]any{"cpu": "1m", "memory": memory}}},
			})
		}
		writeJSON(w, map[string]any{"kind": "PodMetricsList", "apiVersion": metricsGroupVersion, "metadata": map[string]any{}, "items": items})
	})
	srv := httptest.NewUnstartedServer(mux)
	// The API server dropping a connection is logged as a TLS error: nothing the
	// test needs.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// port returns the port srv listens on.
func port(srv *httptest.Server) string {
	return srv.URL[strings.LastIndex(srv.URL, ":")+1:]
}
