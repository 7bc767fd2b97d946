package health

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// failingWaits are the reasons a container waits for that do not pass by themselves:
// the image cannot be pulled, the container keeps crashing, or its configuration is
// broken. A pod with such a container is Degraded, whatever its phase.
var failingWaits = map[string]bool{
	"CrashLoopBackOff":           true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// readPod judges a pod by its phase and its containers' states: a container that
// waits for a failing reason makes it Degraded, naming the container.
func readPod(obj *unstructured.Unstructured) (Result, error) {
	pod := &corev1.Pod{}
	if err := typed(obj, pod); err != nil {
		return Result{}, err
	}
	return podHealth(pod), nil
}

func podHealth(pod *corev1.Pod) Result {
	if bad, ok := failingContainer(pod); ok {
		return Result{Code: v1alpha1.HealthDegraded, Message: bad}
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return healthy
	case corev1.PodFailed:
		return Result{Code: v1alpha1.HealthDegraded, Message: podFailure(pod)}
	case corev1.PodRunning:
		if podReady(pod) {
			return healthy
		}
		return Result{Code: v1alpha1.HealthProgressing, Message: notReady(pod)}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return result(v1alpha1.HealthProgressing, "not scheduled: %s", firstOf(c.Message, c.Reason))
		}
	}
	return result(v1alpha1.HealthProgressing, "pod is %s", firstOf(string(pod.Status.Phase), "Pending"))
}

// failingContainer names the first container (init containers first) that waits
// for a failing reason.
func failingContainer(pod *corev1.Pod) (string, bool) {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if w := cs.State.Waiting; w != nil && failingWaits[w.Reason] {
				msg := fmt.Sprintf("container %s: %s", cs.Name, w.Reason)
				if w.Message != "" {
					msg += ": " + w.Message
				}
				if t := cs.LastTerminationState.Terminated; t != nil {
					msg += fmt.Sprintf(" (last exit code %d", t.ExitCode)
					if t.Reason != "" {
						msg += ", " + t.Reason
					}
					msg += fmt.Sprintf(", %d restarts)", cs.RestartCount)
				}
				return msg, true
			}
		}
	}
	return "", false
}

// podFailure says why a pod failed: its own reason, or the first container that
// terminated with an error.
func podFailure(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			msg := fmt.Sprintf("container %s: exited with code %d", cs.Name, t.ExitCode)
			if t.Reason != "" {
				msg += ": " + t.Reason
			}
			if t.Message != "" {
				msg += ": " + t.Message
			}
			return msg
		}
	}
	return "pod failed: " + firstOf(pod.Status.Message, pod.Status.Reason, "no reason given")
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// notReady names the containers of a running pod that are not ready.
func notReady(pod *corev1.Pod) string {
	var names []string
	for _, cs := range pod.Status.ContainerStatuses {
		if !cs.Ready {
			names = append(names, cs.Name)
		}
	}
	if len(names) == 0 {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && (c.Reason != "" || c.Message != "") {
				return "pod is not ready: " + why(c.Reason, c.Message)
			}
		}
		return "pod is not ready"
	}
	return "container " + strings.Join(names, ", ") + " not ready"
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
