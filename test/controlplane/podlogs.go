package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// A pod's container logs, with Options.Workloads: kwok serves the kubelet's API
// on the fake node's InternalIP (127.0.0.1) and kubelet port, and answers
// containerLogs from the file a Logs object (kwok.x-k8s.io/v1alpha1, named as
// the pod, in its namespace) names; kube-apiserver reaches it there for
// pods/log, as it reaches a kubelet. So `kubectl logs -f` (or client-go's
// GetLogs with Follow) streams through the real apiserver what a test appends
// to the file: ServePodLog, then PodLog.Append. It is always on with
// Options.Workloads: the CRD kwok reads Logs from takes about 0.2 s to be
// established, while the controller-manager and the scheduler start anyway.

// kwokLogsGVR is the resource of kwok's Logs objects, which kwok watches
// (--enable-crds=Logs).
var kwokLogsGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}

const kwokLogsKind = "Logs"

// installKwokLogsCRD serves kwok's Logs objects and waits until they are
// Established. The schema is open: kwok, not the apiserver, reads them.
func installKwokLogsCRD(ctx context.Context, cfg *rest.Config) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kwok's Logs CRD: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: kwokLogsGVR.Resource + "." + kwokLogsGVR.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: kwokLogsGVR.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: kwokLogsGVR.Resource, Singular: "logs", Kind: kwokLogsKind, ListKind: kwokLogsKind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: kwokLogsGVR.Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating kwok's Logs CRD: %w", err)
	}
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return crdEstablished(ctx, crds, crd.Name)
	})
	if err != nil {
		return fmt.Errorf("waiting for kwok's Logs CRD to be established: %w", err)
	}
	return nil
}

// PodLog is the log of a pod's containers as kwok serves it: a file in the
// control plane's directory, in the container runtime's (CRI) format. Its
// methods are safe for concurrent use.
type PodLog struct {
	mu   gosync.Mutex
	path string
}

// ServePodLog makes kwok serve the log of every container of the pod
// namespace/name (scheduled to the fake node) from a file of its own, empty at
// first, and waits until kube-apiserver serves it as the pod's log: from then on
// lines appended to it (Append) are the pod's log, and a follower of it (`kubectl
// logs -f`) receives them as they come. It needs Options.Workloads.
func (c *ControlPlane) ServePodLog(ctx context.Context, namespace, name string) (*PodLog, error) {
	dir := filepath.Join(c.dir, "pod-logs", namespace)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := &PodLog{path: filepath.Join(dir, name+".log")}
	if err := os.WriteFile(l.path, nil, 0o644); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(c.config)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kwokLogsGVR.GroupVersion().String(),
		"kind":       kwokLogsKind,
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec":       map[string]any{"logs": []any{map[string]any{"logsFile": l.path, "follow": true}}},
	}}
	if _, err := dyn.Resource(kwokLogsGVR).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating kwok's Logs of pod %s/%s: %w", namespace, name, err)
	}
	if err := c.waitPodLog(ctx, namespace, name); err != nil {
		return nil, err
	}
	return l, nil
}

// waitPodLog waits until kube-apiserver answers for the pod's log: the pod is
// on the fake node and kwok has read its Logs object.
func (c *ControlPlane) waitPodLog(ctx context.Context, namespace, name string) error {
	client, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = client.CoreV1().Pods(namespace).GetLogs(name, &corev1.PodLogOptions{TailLines: ptr.To[int64](1)}).DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the log of pod %s/%s is not served: %w", namespace, name, errors.Join(err, last))
	}
	return nil
}

// Append writes lines to the log, each as one line the container wrote to its
// standard output now.
func (l *PodLog) Append(lines ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, line := range lines {
		fmt.Fprintf(&b, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), line)
	}
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
