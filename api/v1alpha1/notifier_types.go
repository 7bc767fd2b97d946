package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NotifierType names a receiver: a chat, a webhook, Alertmanager, or a git host's
// commit status API. The names are Flux's notification-controller's where they fit.
// +kubebuilder:validation:Enum=slack;msteams;discord;googlechat;generic;generic-hmac;alertmanager;github;gitlab;gitea;bitbucketserver
type NotifierType string

// Notifier types.
const (
	NotifierSlack           NotifierType = "slack"
	NotifierMSTeams         NotifierType = "msteams"
	NotifierDiscord         NotifierType = "discord"
	NotifierGoogleChat      NotifierType = "googlechat"
	NotifierGeneric         NotifierType = "generic"
	NotifierGenericHMAC     NotifierType = "generic-hmac"
	NotifierAlertmanager    NotifierType = "alertmanager"
	NotifierGitHub          NotifierType = "github"
	NotifierGitLab          NotifierType = "gitlab"
	NotifierGitea           NotifierType = "gitea"
	NotifierBitbucketServer NotifierType = "bitbucketserver"
)

// IsCommitStatus reports whether the type sets commit statuses on a git host
// rather than sending messages.
func (t NotifierType) IsCommitStatus() bool {
	switch t {
	case NotifierGitHub, NotifierGitLab, NotifierGitea, NotifierBitbucketServer:
		return true
	}
	return false
}

// Severity of a notification event: info covers every event, error the failures.
// +kubebuilder:validation:Enum=info;error
type Severity string

// Severities.
const (
	SeverityInfo  Severity = "info"
	SeverityError Severity = "error"
)

// Notifier tells people what the Syncs of its namespace do: messages to a chat or a
// webhook, alerts to Alertmanager, or commit statuses on the git host of the
// revision a Sync is at. It is owned by the team of its namespace and hears only
// that namespace's Syncs. See docs/notifications.md.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=tether,shortName=nf
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last Delivery",type=date,JSONPath=`.status.lastDelivery.time`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.lastDelivery.result`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Notifier struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NotifierSpec   `json:"spec"`
	Status NotifierStatus `json:"status,omitempty"`
}

// NotifierSpec is where and what a Notifier sends.
type NotifierSpec struct {
	// type of the receiver.
	// +required
	Type NotifierType `json:"type"`
	// address of the receiver: a webhook URL, Alertmanager's base URL, or for
	// commit statuses the repository's web URL (https://HOST/OWNER/REPO). When
	// empty, the key `address` of secretRef holds it (keep webhook URLs that
	// embed a token there). http:// is accepted, for receivers on premises.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	Address string `json:"address,omitempty"`
	// channel, for receivers that have channels (Slack's chat.postMessage).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Channel string `json:"channel,omitempty"`
	// username shown as the sender, where the receiver lets the sender choose.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Username string `json:"username,omitempty"`
	// secretRef names a Secret of the Notifier's namespace with the keys address,
	// token, username and password; for generic-hmac, token is the HMAC key.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// certSecretRef names a Secret of the Notifier's namespace whose ca.crt the
	// receiver's certificate is checked against.
	// +optional
	CertSecretRef *LocalObjectReference `json:"certSecretRef,omitempty"`
	// syncs selects the Syncs of this namespace the Notifier hears; empty selects
	// all of them.
	// +optional
	Syncs *metav1.LabelSelector `json:"syncs,omitempty"`
	// severity filters events: info sends every event, error only failures.
	// Commit statuses are sent whatever the severity.
	// +kubebuilder:default=info
	// +optional
	Severity Severity `json:"severity,omitempty"`
	// suspend stops sending; nothing is queued while it is set.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// NotifierStatus is what the agent observed of its deliveries.
type NotifierStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready is True while the Notifier is configured and its last
	// delivery succeeded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// lastDelivery is the last message or status the agent tried to deliver.
	// +optional
	LastDelivery *Delivery `json:"lastDelivery,omitempty"`
	// failures counts the deliveries given up since the agent started.
	// +optional
	Failures int64 `json:"failures,omitempty"`
}

// Delivery is one attempt to deliver an event, after its retries.
type Delivery struct {
	// time the delivery ended.
	// +required
	Time metav1.Time `json:"time"`
	// event delivered: "<sync>: <reason>", or several Syncs' events coalesced.
	// +kubebuilder:validation:MaxLength=512
	// +required
	Event string `json:"event"`
	// result: Delivered or Failed.
	// +required
	Result string `json:"result"`
	// message says why a delivery failed: the receiver's status code, never its URL.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// Delivery results.
const (
	DeliveryDelivered = "Delivered"
	DeliveryFailed    = "Failed"
)

// NotifierList is a list of Notifiers.
//
// +kubebuilder:object:root=true
type NotifierList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Notifier `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Notifier{}, &NotifierList{})
}
