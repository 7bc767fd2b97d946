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
	// ReasonSecretNotFound and ReasonSecretUnreadable: spec.source.secretRef names a
	// Secret that does not exist, or that cannot be read.
	ReasonSecretNotFound   = "SecretNotFound"
	ReasonSecretUnreadable = "SecretUnreadable"
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

	// ReasonDeleting: the Sync is being deleted and waits for its objects to go.
	ReasonDeleting = "Deleting"
	// ReasonDeletionBlocked: the Sync is being deleted and an object cannot be.
	ReasonDeletionBlocked = "DeletionBlocked"
	// ReasonObjectsLeftBehind: the Warning Event of a Sync deleted with its namespace
	// after its account went first: the finalizer was removed, and the objects it
	// applied outside the namespace, which the account could no longer delete, were
	// left in place (never deleted with the agent's own rights); the Event names them.
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
)
