package namespace

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// conditionTypes are the namespace conditions this controller owns, in
// the order they are written.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// okConditions are the False variants written when a type has no
// problem to report; reasons and messages are upstream's.
var okConditions = map[corev1.NamespaceConditionType]struct{ reason, message string }{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentRemoved", "All content successfully removed"},
}

// passResult is what one pass over a namespace's content found.
type passResult struct {
	discoveryErr error   // discovery failed, perhaps only for some groups
	parseErr     error   // some group versions could not be parsed
	contentErrs  []error // per-resource deletion failures
	// remaining counts the objects still present per resource, and
	// finalizers the objects each finalizer holds.
	remaining  map[schema.GroupVersionResource]int
	finalizers map[string]int
}

// problems returns the True conditions for the problems r found; types
// without a problem are absent.
func (r *passResult) problems() []corev1.NamespaceCondition {
	var out []corev1.NamespaceCondition
	add := func(t corev1.NamespaceConditionType, reason, msg string) {
		out = append(out, corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg})
	}
	if err := r.discoveryErr; err != nil {
		msg := err.Error()
		var gerr *discovery.ErrGroupDiscoveryFailed
		if errors.As(err, &gerr) {
			msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(gerr.Groups), err)
		}
		add(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
	}
	if r.parseErr != nil {
		add(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", r.parseErr.Error())
	}
	if len(r.contentErrs) > 0 {
		msgs := make([]string, 0, len(r.contentErrs))
		for _, e := range r.contentErrs {
			msgs = append(msgs, e.Error())
		}
		slices.Sort(msgs)
		add(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", ")))
	}
	var res []string
	for gvr, n := range r.remaining {
		if n > 0 {
			res = append(res, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
	}
	if len(res) > 0 {
		slices.Sort(res)
		add(corev1.NamespaceContentRemaining, "SomeResourcesRemain", "Some resources are remaining: "+strings.Join(res, ", "))
	}
	var fin []string
	for f, n := range r.finalizers {
		if n > 0 {
			fin = append(fin, fmt.Sprintf("%s in %d resource instances", f, n))
		}
	}
	if len(fin) > 0 {
		slices.Sort(fin)
		add(corev1.NamespaceFinalizersRemaining, "SomeFinalizerRemain", "Some finalizers are remaining: "+strings.Join(fin, ", "))
	}
	return out
}

// setConditions brings status's deletion conditions in line with
// problems: each owned type gets its problem, or its ok variant. A
// condition's transition time moves only when its status flips. It
// returns whether anything changed; other conditions are left alone.
func setConditions(status *corev1.NamespaceStatus, problems []corev1.NamespaceCondition, now metav1.Time) bool {
	changed := false
	for _, t := range conditionTypes {
		want := corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: okConditions[t].reason, Message: okConditions[t].message}
		if i := slices.IndexFunc(problems, func(c corev1.NamespaceCondition) bool { return c.Type == t }); i >= 0 {
			want = problems[i]
		}
		want.LastTransitionTime = now
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == t })
		if i < 0 {
			status.Conditions = append(status.Conditions, want)
			changed = true
			continue
		}
		old := &status.Conditions[i]
		if old.Status == want.Status && old.Reason == want.Reason && old.Message == want.Message {
			continue
		}
		if old.Status == want.Status {
			want.LastTransitionTime = old.LastTransitionTime
		}
		*old = want
		changed = true
	}
	return changed
}
