package main

import (
	"context"
	"fmt"
	"io"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// whoAmI is the user c acts as, as the API server knows them (a
// SelfSubjectReview); empty when it will not say.
func whoAmI(ctx context.Context, c client.Client) string {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return ""
	}
	return review.Status.UserInfo.Username
}

// recordAction records, as the user, an Event on s naming them and what they
// asked for (plan.ActionEvent). The action is done already: a user who may not
// create Events is told so on w, and nothing fails.
func recordAction(ctx context.Context, c client.Client, s *v1alpha1.Sync, action string, w io.Writer) {
	record(ctx, c, plan.ActionEvent(s, action, whoAmI(ctx, c), "tether CLI", time.Now()), w)
}

// recordPin records, as the user, an Event on s naming them and the commit
// they pinned it to, or that they removed its pin ("") (plan.PinEvent).
func recordPin(ctx context.Context, c client.Client, s *v1alpha1.Sync, commit string, w io.Writer) {
	record(ctx, c, plan.PinEvent(s, commit, whoAmI(ctx, c), "tether CLI", time.Now()), w)
}

// record creates e as the user; failing, it says so on w.
func record(ctx context.Context, c client.Client, e *corev1.Event, w io.Writer) {
	if err := c.Create(ctx, e); err != nil {
		fmt.Fprintf(w, "  (not recorded as an Event on the Sync: %v)\n", err)
	}
}
