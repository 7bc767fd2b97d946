package e2e

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/client-go/rest"
)

// families is one scrape of a /metrics page, by metric name.
type families map[string]*dto.MetricFamily

// scrapeFamilies reads url's /metrics in the protobuf exposition, which carries
// native histograms (controller-runtime's workqueue histograms have native buckets
// 10% wide, where the classic ones are a factor of ten wide).
func scrapeFamilies(c *http.Client, url string) (families, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil) //nolint:noctx // a benchmark's one-shot scrape
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	out := families{}
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", url, err)
		}
		out[mf.GetName()] = mf
	}
}

// scrapeAgent reads agent a's metrics.
func scrapeAgent(a *agent) (families, error) {
	return scrapeFamilies(http.DefaultClient, "http://"+a.metricsAddr+"/metrics")
}

// scrapeAPIServer reads the API server's own metrics with the admin's credentials.
func scrapeAPIServer(cfg *rest.Config) (families, error) {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return scrapeFamilies(c, cfg.Host+"/metrics")
}

// sum adds up the counter (or gauge) series of name whose labels match.
func (f families) sum(name string, match func(labels map[string]string) bool) float64 {
	total := 0.0
	for _, m := range f[name].GetMetric() {
		if match != nil && !match(labelMap(m)) {
			continue
		}
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return total
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// nativeHistogram is the positive buckets of a native histogram, by index, with
// the zero bucket apart: enough to subtract two scrapes and read quantiles.
type nativeHistogram struct {
	schema int32
	zero   float64
	counts map[int]float64 // bucket index → observations
}

// histogram returns the native histogram of series name whose labels match. ok is
// false if it has none (an agent built without native histograms).
func (f families) histogram(name string, match func(labels map[string]string) bool) (h nativeHistogram, ok bool) {
	for _, m := range f[name].GetMetric() {
		if match != nil && !match(labelMap(m)) {
			continue
		}
		hist := m.GetHistogram()
		if hist == nil || (len(hist.GetPositiveSpan()) == 0 && hist.GetZeroCount() == 0 && hist.GetSampleCount() > 0) {
			return nativeHistogram{}, false
		}
		h = nativeHistogram{schema: hist.GetSchema(), zero: float64(hist.GetZeroCount()), counts: map[int]float64{}}
		index, delta, count := 0, 0, int64(0)
		for _, span := range hist.GetPositiveSpan() {
			index += int(span.GetOffset())
			for range span.GetLength() {
				count += hist.GetPositiveDelta()[delta]
				h.counts[index] = float64(count)
				index++
				delta++
			}
		}
		return h, true
	}
	return nativeHistogram{}, false
}

// since is the observations of h made after earlier was scraped. The client
// library widens the buckets (lowers the schema) when a histogram would need
// more than its maximum number of them, so the finer of the two is first brought
// to the coarser one's schema.
func (h nativeHistogram) since(earlier nativeHistogram) nativeHistogram {
	schema := min(h.schema, earlier.schema)
	later, before := h.at(schema), earlier.at(schema)
	out := nativeHistogram{schema: schema, zero: later.zero - before.zero, counts: map[int]float64{}}
	for i, c := range later.counts {
		out.counts[i] = c - before.counts[i]
	}
	return out
}

// at is h with its buckets merged to schema, which must not be finer than h's:
// each step down merges buckets 2j-1 and 2j into bucket j.
func (h nativeHistogram) at(schema int32) nativeHistogram {
	out := nativeHistogram{schema: schema, zero: h.zero, counts: map[int]float64{}}
	for i, c := range h.counts {
		for s := h.schema; s > schema; s-- {
			i = (i + 1) >> 1 // ceil(i/2), for negative indices too
		}
		out.counts[i] += c
	}
	return out
}

// count is the number of observations.
func (h nativeHistogram) count() float64 {
	n := h.zero
	for _, c := range h.counts {
		n += c
	}
	return n
}

// quantile is the q-quantile (0 < q < 1) of the observations, as the upper
// bound of the bucket it falls in (buckets are 2^(2^-schema) wide: under 10% at
// controller-runtime's settings), or 0 if it falls in the zero bucket.
func (h nativeHistogram) quantile(q float64) float64 {
	rank := q * h.count()
	seen := h.zero
	if seen >= rank {
		return 0
	}
	indices := make([]int, 0, len(h.counts))
	for i := range h.counts {
		indices = append(indices, i)
	}
	sort.Ints(indices)
	base := math.Pow(2, math.Pow(2, -float64(h.schema)))
	for _, i := range indices {
		seen += h.counts[i]
		if seen >= rank {
			return math.Pow(base, float64(i))
		}
	}
	return math.NaN()
}
