package v1alpha1

// Reasons of a Sync's conditions and Events: the values users alert on and route by.
// They are part of the API: renaming one breaks alerts and event filters, so every
// reason the reconciler sets is declared here, once. Git failures carry the reasons
// of the source package (RefNotFound, HostUnreachable, ...), which name the cause in
// the same CamelCase form.
const (
	// ReasonSucceeded: the step a condition describes finished (Ready, SourceReady,
	// Healthy).
	ReasonSucceeded = "Succeeded"
	// ReasonProgressing: the revision is applied and its objects are rolling out.
	ReasonProgressing = "Progressing"
	// ReasonRetrying: a transient failure (the API server or git unreachable, a
	// conflict); the Sync is retried with backoff.
	ReasonRetrying = "RetryingAfterError"
	// ReasonReconcileFailed: a reconcile failed for a reason with no class of its
	// own; it is retried with backoff.
	ReasonReconcileFailed = "ReconcileFailed"
	// ReasonSuspended: spec.suspend is true.
	ReasonSuspended = "Suspended"

	// ReasonRenderFailed: the path could not be rendered (broken YAML, a bad
	// kustomization); nothing was applied or pruned.
	ReasonRenderFailed = "RenderFailed"
	// ReasonRenderLimitExceeded: rendering the path would cost more than the
	// agent allows one render (tree entries, YAML nodes, bytes read or rendered);
	// the message names the file or directory and the bound. Nothing was applied.
	ReasonRenderLimitExceeded = "RenderLimitExceeded"
	// ReasonDecryptionKeysNotFound: spec.decryption.secretRef names a Secret that
	// does not exist, holds no *.agekey or *.asc key, or holds a key that does not
	// parse; nothing was applied. Creating or fixing the Secret queues the Sync.
	ReasonDecryptionKeysNotFound = "DecryptionKeysNotFound"
	// ReasonDecryptionFailed: a SOPS file of the revision could not be decrypted:
	// none of the Sync's keys opens it, or it is no valid SOPS file. The message
	// names the file and the cause; nothing of the revision was applied.
	ReasonDecryptionFailed = "DecryptionFailed"
	// ReasonDecryptionTampered: a SOPS file's message authentication code does
	// not match its content: the file was changed after it was encrypted. The
	// message names the file; nothing of the revision was applied.
	ReasonDecryptionTampered = "DecryptionTampered"
	// ReasonUnencryptedSecret: spec.decryption.requireEncryption is true and the
	// revision holds a Secret that is not encrypted with SOPS; the message names
	// the file. Nothing of the revision was applied.
	ReasonUnencryptedSecret = "UnencryptedSecret"
	// ReasonValidationFailed: objects of the revision failed their server-side
	// dry-run; nothing of the revision was written. The message names each object.
	ReasonValidationFailed = "ValidationFailed"
	// ReasonApplyFailed: the API server refused a write that had passed its dry-run,
	// in a way retrying cannot fix (an object changed under it into an invalid one).
	ReasonApplyFailed = "ApplyFailed"
	// ReasonRevisionTooLarge: the revision has more objects than one Sync's status
	// can track; it was refused before anything was applied.
	ReasonRevisionTooLarge = "RevisionTooLarge"
	// ReasonEmptyRender: the path rendered no objects and spec.allowEmpty is false;
	// nothing was applied or pruned.
	ReasonEmptyRender = "EmptyRender"
	// ReasonPruneLimit: more of the inventory left git than spec.pruneLimit allows;
	// nothing was pruned.
	ReasonPruneLimit = "PruneLimitExceeded"
	// ReasonSecretNotFound: spec.source.secretRef names a Secret that does not
	// exist; git is asked again at the interval.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretUnreadable: the Secret spec.source.secretRef names cannot be read,
	// or holds none of the keys Tether reads.
	ReasonSecretUnreadable = "SecretUnreadable"
	// ReasonValuesNotFound: spec.helm.valuesFrom names a ConfigMap or Secret, or a
	// key of one, that does not exist (or that the Sync's identity may not
	// read); it is asked again at the interval, with the last good state kept.
	ReasonValuesNotFound = "ValuesNotFound"
	// ReasonVariablesNotFound: spec.postBuild.substituteFrom names a ConfigMap or
	// Secret that does not exist (and is not optional) or that the Sync's
	// identity may not read; it is asked again at the interval, with the last
	// good state kept.
	ReasonVariablesNotFound = "VariablesNotFound"
	// ReasonSubstitutionFailed: spec.postBuild could not substitute the rendered
	// objects: strict mode met a variable that is not set (the message names the
	// object and the variable), a variable's name is invalid, an expression does
	// not parse, or the substituted objects would pass the agent's byte budget.
	// Nothing was applied.
	ReasonSubstitutionFailed = "SubstitutionFailed"
	// ReasonFieldFight: Tether stopped correcting fields another manager kept
	// changing back (the reason of the FieldConflict condition).
	ReasonFieldFight = "FieldFight"
	// ReasonFieldConflict: the Warning Event for each field given up after a fight.
	ReasonFieldConflict = "FieldConflict"

	// Tenancy: a Sync that reaches beyond what its identity may do (docs/multi-tenancy.md).

	// ReasonServiceAccountNotFound: the account the Sync acts as (spec.serviceAccountName
	// or the agent's --default-service-account) does not exist in the Sync's namespace.
	// The Sync is Stalled until the account is created or the field changes.
	ReasonServiceAccountNotFound = "ServiceAccountNotFound"
	// ReasonForbidden: the account the Sync acts as may not do something the revision
	// needs (read, dry-run, apply or delete an object, or read the secretRef). The
	// message names the object, the verb and the account.
	ReasonForbidden = "Forbidden"
	// ReasonCrossNamespace: the revision holds objects outside the Sync's own
	// namespace (in another namespace, or cluster-scoped) and the agent runs with
	// --allow-cross-namespace=false. The message names every such object; nothing of
	// the revision is written.
	ReasonCrossNamespace = "CrossNamespaceRefused"
	// ReasonImpersonationUnavailable: the Sync names an account but the agent was
	// started without the means to act as one.
	ReasonImpersonationUnavailable = "ImpersonationUnavailable"

	// Remote clusters: a Sync whose spec.destination names another cluster
	// (docs/multi-cluster.md).

	// ReasonKubeConfigNotFound: the kubeconfig Secret (spec.destination.kubeConfig)
	// or its key does not exist in the Sync's namespace.
	ReasonKubeConfigNotFound = "KubeConfigNotFound"
	// ReasonKubeConfigInvalid: the kubeconfig cannot be used: it does not parse,
	// names no cluster, names a file, or runs a credential plugin while the agent
	// runs without --allow-kubeconfig-exec. The message says which.
	ReasonKubeConfigInvalid = "KubeConfigInvalid"
	// ReasonClusterNotFound: spec.destination.cluster names no cluster registered
	// in the agent's namespace.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonClusterNotAllowed: the registered cluster does not allow the Sync's
	// namespace (its tether.dev/allowed-namespaces annotation).
	ReasonClusterNotAllowed = "ClusterNotAllowed"
	// ReasonClusterUnreachable: the remote cluster's API server does not answer
	// (refused, timed out); the Sync's objects there are left as they were, and it
	// is tried again with backoff. The message names the cluster.
	ReasonClusterUnreachable = "ClusterUnreachable"

	// ReasonDeleting: the Sync is being deleted and waits for its objects to go.
	ReasonDeleting = "Deleting"
	// ReasonDeletionBlocked: the Sync is being deleted and an object cannot be.
	ReasonDeletionBlocked = "DeletionBlocked"
	// ReasonObjectsLeftBehind: the Warning Event of a Sync deleted with its namespace
	// after its account went first: the finalizer was removed, and the objects it
	// applied outside the namespace, which the account could no longer delete, were
	// left in place (never deleted with the agent's own rights); the Event names them.
	// It is recorded in the agent's own namespace, about its leader election Lease,
	// since the API server refuses Events in a terminating namespace.
	ReasonObjectsLeftBehind = "ObjectsLeftBehind"

	// Reasons of Normal Events.

	// ReasonApplied: a revision was applied and changed the cluster.
	ReasonApplied = "Applied"
	// ReasonDriftCorrected: objects changed in the cluster were set back to git.
	ReasonDriftCorrected = "DriftCorrected"
	// ReasonFinalized: a deleted Sync pruned or orphaned everything it applied.
	ReasonFinalized = "Finalized"
	// ReasonInventoryRebuilt: the inventory was missing and was rebuilt from the
	// objects that carry the Sync's label.
	ReasonInventoryRebuilt = "InventoryRebuilt"
	// ReasonKindVanished: inventory entries whose kind the API server no longer
	// serves were dropped: the objects cannot exist any more.
	ReasonKindVanished = "KindVanished"

	// History, pins and rollbacks (docs/rollback.md).

	// ReasonPinned: the reason of the Pinned condition, True while the Sync applies
	// the commit its tether.dev/pin-revision annotation names; the message names it
	// and the commit its ref is at.
	ReasonPinned = "Pinned"
	// ReasonPinInvalid: the tether.dev/pin-revision annotation is not a full commit
	// hash, or names a commit the repository does not hold; the Sync is Stalled,
	// with the cluster as it was, until the annotation changes.
	ReasonPinInvalid = "PinInvalid"
	// ReasonRolledBack: the Warning Event of an automatic rollback
	// (spec.rollback.onFailure): the message names the revision that failed, why,
	// and the revision applied again in its place.
	ReasonRolledBack = "RolledBack"
	// ReasonHealthTimeout: the reason of the RolledBack condition when the failed
	// revision was not Healthy within spec.rollback.healthTimeout (Degraded, the
	// health reason, when it turned Degraded).
	ReasonHealthTimeout = "HealthTimeout"
	// ReasonRequestedByUser: the Normal Event that records a person's action on
	// a Sync through Tether's CLI or UI (reconcile, suspend, resume); the message
	// names the user as the API server knows them, the action and the tool.
	ReasonRequestedByUser = "RequestedByUser"
	// Order: dependencies between Syncs, waves and hooks (docs/ordering.md).

	// ReasonDependencyNotReady: a Sync named in spec.dependsOn is not Ready at its
	// current revision, or does not exist; the message names each. The Sync waits,
	// and is looked at again when a dependency changes.
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonDependencyCycle: spec.dependsOn leads back to this Sync; the message
	// names the cycle. Nothing is applied until a Sync of the cycle changes.
	ReasonDependencyCycle = "DependencyCycle"
	// ReasonInvalidOrdering: an object's wave, hook or delete-policy annotation
	// cannot be read; the message names the object and the annotation. Nothing of
	// the revision was applied.
	ReasonInvalidOrdering = "InvalidOrdering"
	// ReasonHookFailed: a hook of the revision failed (a Job that failed, an object
	// Degraded); the message names it and why. The revision stopped there and its
	// SyncFail hooks ran; the next commit or a requested reconcile tries again.
	ReasonHookFailed = "HookFailed"
	// ReasonWaveFailed: an object of a wave turned Degraded before the next wave
	// could start; the message names it and why. The revision stopped there.
	ReasonWaveFailed = "WaveFailed"
	// ReasonPhaseStarted: the Normal Event recorded as each phase (PreSync, Sync,
	// PostSync, SyncFail) of a revision starts.
	ReasonPhaseStarted = "PhaseStarted"
)

// Reasons of a git failure (SourceReady and Ready False): each names a cause a
// user can act on, and the message says more. The source package classes its
// errors (source.FetchError) with these.
const (
	// ReasonRefNotFound: the branch or tag does not exist on the remote (any more).
	ReasonRefNotFound = "RefNotFound"
	// ReasonNoMatchingTag: no tag of the remote satisfies the semver range.
	ReasonNoMatchingTag = "NoMatchingTag"
	// ReasonInvalidSemVer: the semver range cannot be parsed.
	ReasonInvalidSemVer = "InvalidSemVer"
	// ReasonUnsupportedRef: the ref names nothing this build can follow.
	ReasonUnsupportedRef = "UnsupportedRef"
	// ReasonGitOperation: any other failure of git itself.
	ReasonGitOperation = "GitOperationFailed"
	// ReasonUnsupportedURL: the URL's scheme is not one Tether speaks.
	ReasonUnsupportedURL = "UnsupportedURL"
	// ReasonCommitNotFound: a pinned commit is on no branch of the remote.
	ReasonCommitNotFound = "CommitNotFound"
	// ReasonRevisionNotVerified: spec.source.verify refused the revision: the
	// commit or tag is not signed, is signed by a key the Sync does not trust,
	// or its signature does not verify. The message names the commit or tag,
	// the signing key if any, and why; the revision applied last stays applied.
	ReasonRevisionNotVerified = "RevisionNotVerified"
	// ReasonVerificationKeysInvalid: spec.source.verify's Secret holds no key,
	// or a value that is neither armored OpenPGP keys nor allowed_signers
	// lines. The message names the Secret's key at fault.
	ReasonVerificationKeysInvalid = "VerificationKeysInvalid"
	// ReasonCacheUnreadable: the on-disk cache was damaged; it is discarded and
	// the next fetch clones afresh.
	ReasonCacheUnreadable = "CacheUnreadable"
	// ReasonHostUnreachable: the host could not be reached (name resolution,
	// connection refused, timeout).
	ReasonHostUnreachable = "HostUnreachable"
	// ReasonAuthenticationFailed: the remote refused the credentials, or asked for
	// some and none were given.
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonRepositoryNotFound: the host has no such repository (hosts also say so
	// to clients without access).
	ReasonRepositoryNotFound = "RepositoryNotFound"
	// ReasonInvalidCredentials: the credentials cannot be used as given (an
	// unreadable SSH key, an SSH URL without a key).
	ReasonInvalidCredentials = "InvalidCredentials"
	// ReasonHostKeyUnknown: known_hosts has no key for the SSH host.
	ReasonHostKeyUnknown = "HostKeyUnknown"
	// ReasonHostKeyMismatch: the SSH host presented a key that known_hosts does not
	// list for it: a changed host key, or someone in the middle.
	ReasonHostKeyMismatch = "HostKeyMismatch"
	// ReasonCacheFull: the git cache is over the agent's size cap
	// (--max-git-cache-bytes); the commit is fetched once repositories no Sync
	// uses have been removed, or the cap raised.
	ReasonCacheFull = "CacheFull"
	// ReasonHostBusy: the host already has as many fetches running as the agent
	// allows at once (a slow or busy host) and no place came free within a few
	// seconds in its line (served least recently served first); the caller
	// retries shortly. Not a failure of the Sync.
	ReasonHostBusy = "HostBusy"
	// ReasonHistoryRewritten: the ref now names a commit that does not descend
	// from the one applied through it (a force-push to an older commit, a
	// rewritten history). The caller holds the applied revision until the Sync
	// accepts the new commit (AcceptRevisionAnnotation).
	ReasonHistoryRewritten = "HistoryRewritten"
	// ReasonCertificateUntrusted: the HTTPS certificate is not signed by a trusted
	// authority (see the caFile key).
	ReasonCertificateUntrusted = "CertificateUntrusted"
	// ReasonChartNotFound: the chart repository's index (an OCI registry's tag
	// list) has no chart of the name, or no version of it that satisfies
	// spec.source.chart.version (yet).
	ReasonChartNotFound = "ChartNotFound"
	// ReasonChartRepositoryFailed: the chart repository answered with an error,
	// an index that cannot be read, or a package whose digest is not the one its
	// index names; or an OCI registry's manifest has no one layer of Helm's chart
	// media type.
	ReasonChartRepositoryFailed = "ChartRepositoryFailed"
	// ReasonRegistryFailed: an OCI registry answered with an error, or with
	// what the distribution spec does not allow (a manifest or blob whose
	// content is not its digest's, an answer that cannot be read).
	ReasonRegistryFailed = "RegistryFailed"
)

// Reasons of the Events recorded when a Sync's health (status.health) changes, one
// Event per change: Normal when it turns Healthy, Progressing (ReasonProgressing) or
// Suspended (ReasonSuspended), Warning when it turns Degraded or Missing. They are
// also the reasons of the Healthy condition when it is False.
const (
	// ReasonHealthy: every managed object is healthy.
	ReasonHealthy = "Healthy"
	// ReasonDegraded: a managed object failed (a rollout past its deadline, a
	// container that cannot start, a failed Job, a resource its controller reports
	// not Ready); the message names it and why.
	ReasonDegraded = "Degraded"
	// ReasonMissing: a managed object does not exist in the cluster.
	ReasonMissing = "Missing"
	// ReasonHealthUnknown: the health of a managed object cannot be told.
	ReasonHealthUnknown = "HealthUnknown"
	// ReasonHealthCheckInvalid: an expression of spec.healthChecks does not compile;
	// the Sync is Stalled until it is fixed, and nothing is applied. The message
	// names the kind, the expression and the error.
	ReasonHealthCheckInvalid = "HealthCheckInvalid"

	// Reasons of a SyncSet's conditions.

	// ReasonGenerateFailed: a generator or the template cannot make the SyncSet's
	// Syncs (a git file that does not parse, a placeholder with no parameter, a
	// Sync that would be invalid, two sets making one name); the message names the
	// generator entry. No Sync was made, changed or deleted.
	ReasonGenerateFailed = "GenerateFailed"
	// ReasonParameterRefused: the template puts a parameter in a field that decides
	// what a Sync may do (serviceAccountName, a dependency's namespace); such
	// fields come from the SyncSet's own spec. No Sync was made, changed or deleted.
	ReasonParameterRefused = "ParameterRefused"
	// ReasonDeletionsHeld: the generators yielded nothing, or fewer Syncs than
	// spec.generatedLimit lets go; the Syncs they no longer yield are kept.
	ReasonDeletionsHeld = "DeletionsHeld"
	// ReasonRolloutProgressing: a rolling sync is moving a step to a new revision.
	ReasonRolloutProgressing = "RolloutProgressing"
	// ReasonRolloutHalted: a Sync of a rolling sync's step is Degraded at the new
	// revision; the later steps stay where they are.
	ReasonRolloutHalted = "RolloutHalted"
	// ReasonRolloutRolledBack: a Sync of a rolling sync's step failed at the new
	// revision and, with rollback on, the step went back to the commits its
	// Syncs had; it stays there, and the later steps where they are, until the
	// Syncs' ref names another revision.
	ReasonRolloutRolledBack = "RolloutRolledBack"
)

// ReasonMeaning is what one reason does to a Sync: whether the Sync is stalled or
// retried, and whether a False Ready condition with it counts as a failure. The
// table Reasons holds one for every reason above; the metrics, the reconciler's
// error mapping and the generated docs/reasons.md all read it, so a reason is
// declared once, here, with its meaning.
//
// +kubebuilder:object:generate=false
type ReasonMeaning struct {
	// Reason is the value in conditions and Events.
	Reason string
	// Stalls: a Sync that fails for this reason is Stalled (Ready False, Stalled
	// True): retrying cannot help until git, the Sync or the cluster changes, so it
	// is looked at again only at its interval, with the last good state kept.
	Stalls bool
	// Retries: a Sync that fails for this reason keeps working on it (Ready False,
	// Reconciling True): it is retried with backoff, or at its interval for git.
	Retries bool
	// Failure: a False Ready condition with this reason is a failure that
	// tether_sync_failure reports by name; any other reason is reported as Other,
	// so that the label's values stay bounded.
	Failure bool
}

// Reasons is every reason a Sync's conditions and Events carry, with what it
// means. A reason declared above and missing here fails the package's tests.
var Reasons = []ReasonMeaning{
	{Reason: ReasonSucceeded},
	{Reason: ReasonProgressing},
	{Reason: ReasonRetrying},
	{Reason: ReasonReconcileFailed, Retries: true, Failure: true},
	{Reason: ReasonSuspended},

	{Reason: ReasonRenderFailed, Stalls: true, Failure: true},
	{Reason: ReasonRenderLimitExceeded, Stalls: true, Failure: true},
	{Reason: ReasonDecryptionKeysNotFound, Stalls: true, Failure: true},
	{Reason: ReasonDecryptionFailed, Stalls: true, Failure: true},
	{Reason: ReasonDecryptionTampered, Stalls: true, Failure: true},
	{Reason: ReasonUnencryptedSecret, Stalls: true, Failure: true},
	// Stalled when the API server refuses the objects, retried when the dry-run
	// failed for a reason of the cluster's (a timeout, a 5xx).
	{Reason: ReasonValidationFailed, Stalls: true, Retries: true, Failure: true},
	{Reason: ReasonApplyFailed, Stalls: true, Failure: true},
	{Reason: ReasonRevisionTooLarge, Stalls: true, Failure: true},
	{Reason: ReasonEmptyRender, Stalls: true, Failure: true},
	{Reason: ReasonPruneLimit, Stalls: true, Failure: true},
	{Reason: ReasonSecretNotFound, Retries: true, Failure: true},
	{Reason: ReasonSecretUnreadable, Retries: true, Failure: true},
	{Reason: ReasonValuesNotFound, Retries: true, Failure: true},
	{Reason: ReasonVariablesNotFound, Retries: true, Failure: true},
	{Reason: ReasonSubstitutionFailed, Stalls: true, Failure: true},
	{Reason: ReasonFieldFight},
	{Reason: ReasonFieldConflict},

	{Reason: ReasonServiceAccountNotFound, Stalls: true, Failure: true},
	{Reason: ReasonForbidden, Stalls: true, Failure: true},
	{Reason: ReasonCrossNamespace, Stalls: true, Failure: true},
	{Reason: ReasonImpersonationUnavailable, Stalls: true, Failure: true},
	{Reason: ReasonKubeConfigNotFound, Stalls: true, Failure: true},
	{Reason: ReasonKubeConfigInvalid, Stalls: true, Failure: true},
	{Reason: ReasonClusterNotFound, Stalls: true, Failure: true},
	{Reason: ReasonClusterNotAllowed, Stalls: true, Failure: true},
	{Reason: ReasonClusterUnreachable, Failure: true},

	{Reason: ReasonDeleting, Failure: true},
	{Reason: ReasonDeletionBlocked, Retries: true, Failure: true},
	{Reason: ReasonObjectsLeftBehind},

	{Reason: ReasonApplied},
	{Reason: ReasonDriftCorrected},
	{Reason: ReasonFinalized},
	{Reason: ReasonInventoryRebuilt},
	{Reason: ReasonKindVanished},

	{Reason: ReasonPinned},
	{Reason: ReasonPinInvalid, Stalls: true, Failure: true},
	{Reason: ReasonRolledBack},
	{Reason: ReasonHealthTimeout},
	{Reason: ReasonRequestedByUser},
	{Reason: ReasonDependencyNotReady},
	{Reason: ReasonDependencyCycle, Stalls: true, Failure: true},
	{Reason: ReasonInvalidOrdering, Stalls: true, Failure: true},
	{Reason: ReasonHookFailed, Stalls: true, Failure: true},
	{Reason: ReasonWaveFailed, Stalls: true, Failure: true},
	{Reason: ReasonPhaseStarted},

	{Reason: ReasonRefNotFound, Retries: true, Failure: true},
	{Reason: ReasonNoMatchingTag, Retries: true, Failure: true},
	{Reason: ReasonInvalidSemVer, Stalls: true, Failure: true},
	{Reason: ReasonUnsupportedRef, Retries: true, Failure: true},
	{Reason: ReasonGitOperation, Retries: true, Failure: true},
	{Reason: ReasonUnsupportedURL, Stalls: true, Failure: true},
	{Reason: ReasonCommitNotFound, Retries: true, Failure: true},
	{Reason: ReasonRevisionNotVerified, Stalls: true, Failure: true},
	{Reason: ReasonVerificationKeysInvalid, Stalls: true, Failure: true},
	{Reason: ReasonCacheUnreadable, Retries: true, Failure: true},
	{Reason: ReasonHostUnreachable, Retries: true, Failure: true},
	{Reason: ReasonAuthenticationFailed, Retries: true, Failure: true},
	{Reason: ReasonRepositoryNotFound, Retries: true, Failure: true},
	{Reason: ReasonInvalidCredentials, Retries: true, Failure: true},
	{Reason: ReasonHostKeyUnknown, Retries: true, Failure: true},
	{Reason: ReasonHostKeyMismatch, Retries: true, Failure: true},
	{Reason: ReasonCacheFull, Retries: true, Failure: true},
	// Waiting on a slow host is not a failure of the Sync: it is asked again
	// shortly, with nothing in its conditions.
	{Reason: ReasonHostBusy},
	{Reason: ReasonHistoryRewritten, Retries: true, Failure: true},
	{Reason: ReasonCertificateUntrusted, Retries: true, Failure: true},
	{Reason: ReasonChartNotFound, Retries: true, Failure: true},
	{Reason: ReasonChartRepositoryFailed, Retries: true, Failure: true},
	{Reason: ReasonRegistryFailed, Retries: true, Failure: true},

	{Reason: ReasonHealthy},
	// Ready False (Degraded) when spec.wait holds Ready back for health.
	{Reason: ReasonDegraded, Failure: true},
	{Reason: ReasonMissing},
	{Reason: ReasonHealthUnknown},
	{Reason: ReasonHealthCheckInvalid, Stalls: true, Failure: true},

	{Reason: ReasonGenerateFailed, Stalls: true, Failure: true},
	{Reason: ReasonParameterRefused, Stalls: true, Failure: true},
	{Reason: ReasonDeletionsHeld},
	{Reason: ReasonRolloutProgressing},
	{Reason: ReasonRolloutHalted, Stalls: true, Failure: true},
	{Reason: ReasonRolloutRolledBack, Stalls: true, Failure: true},
}

// MeaningOf returns the meaning of reason, and false for a reason Reasons does
// not hold.
func MeaningOf(reason string) (ReasonMeaning, bool) {
	for _, m := range Reasons {
		if m.Reason == reason {
			return m, true
		}
	}
	return ReasonMeaning{}, false
}
