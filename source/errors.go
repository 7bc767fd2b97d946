package source

import (
	"tether.dev/tether/api/v1alpha1"
)

// Reasons a FetchError carries: the reasons of git failures that api/v1alpha1
// declares, with what each means (v1alpha1.Reasons). Each names a cause a user can
// act on; the message says more.
const (
	ReasonRefNotFound           = v1alpha1.ReasonRefNotFound
	ReasonNoMatchingTag         = v1alpha1.ReasonNoMatchingTag
	ReasonInvalidSemVer         = v1alpha1.ReasonInvalidSemVer
	ReasonUnsupportedRef        = v1alpha1.ReasonUnsupportedRef
	ReasonGitOperation          = v1alpha1.ReasonGitOperation
	ReasonUnsupportedURL        = v1alpha1.ReasonUnsupportedURL
	ReasonCommitNotFound        = v1alpha1.ReasonCommitNotFound
	ReasonCacheUnreadable       = v1alpha1.ReasonCacheUnreadable
	ReasonHostUnreachable       = v1alpha1.ReasonHostUnreachable
	ReasonAuthenticationFailed  = v1alpha1.ReasonAuthenticationFailed
	ReasonRepositoryNotFound    = v1alpha1.ReasonRepositoryNotFound
	ReasonInvalidCredentials    = v1alpha1.ReasonInvalidCredentials
	ReasonHostKeyUnknown        = v1alpha1.ReasonHostKeyUnknown
	ReasonHostKeyMismatch       = v1alpha1.ReasonHostKeyMismatch
	ReasonCacheFull             = v1alpha1.ReasonCacheFull
	ReasonHostBusy              = v1alpha1.ReasonHostBusy
	ReasonHistoryRewritten      = v1alpha1.ReasonHistoryRewritten
	ReasonCertificateUntrusted  = v1alpha1.ReasonCertificateUntrusted
	ReasonChartNotFound         = v1alpha1.ReasonChartNotFound
	ReasonChartRepositoryFailed = v1alpha1.ReasonChartRepositoryFailed
	ReasonRenderLimitExceeded   = v1alpha1.ReasonRenderLimitExceeded
)
