package notify

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics counts deliveries per Notifier.
type metrics struct {
	deliveries *prometheus.CounterVec
	failures   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_notifications_total",
			Help: "Notifications delivered or given up (after their retries), per Notifier and result.",
		}, []string{"namespace", "name", "result"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_notification_failures_total",
			Help: "Notifications given up after their retries, per Notifier.",
		}, []string{"namespace", "name"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.deliveries, m.failures} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(namespace, name string, err error) {
	result := "delivered"
	if err != nil {
		result = "failed"
		m.failures.WithLabelValues(namespace, name).Inc()
	}
	m.deliveries.WithLabelValues(namespace, name, result).Inc()
}

func (m *metrics) forget(namespace, name string) {
	m.deliveries.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
	m.failures.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
}
