// Package history keeps the revision history of the workloads that
// record one (StatefulSets and DaemonSets), and claims the objects such a
// workload owns (its pods and its revisions).
//
// # Revisions
//
// A ControllerRevision is a frozen copy of one version of a workload's
// pod template. Its data is a strategic merge patch that puts that
// template back:
//
//	{"spec":{"template":{"$patch":"replace","metadata":{...},"spec":{...}}}}
//
// the bytes upstream's controllers write, so a revision written by either
// reads the same to the other. The revision is named
// "<owner>-<hash>", the hash being FNV-32 over those bytes (and the
// collision count, when a different revision already holds the name),
// and revision numbers count up: the newest template has the highest. A
// rollback to an older template does not copy it: that revision gets the
// next number.
//
// Workloads tell their pods' versions by a label carrying the revision's
// name (StatefulSets) or hash (DaemonSets), so a pod is up to date when
// its label names the newest revision.
//
// # Claiming
//
// PlanClaims and Claim adopt orphans that match a workload's selector
// and release owned objects that stopped matching, by patching
// metadata.ownerReferences, as upstream's controller-ref manager does;
// objects controlled by someone else are never touched.
package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
)

// HashLabel carries a StatefulSet revision's hash, as upstream labels it.
const HashLabel = "controller.kubernetes.io/hash"

// maxPrefix keeps "<prefix>-<hash>" within the 253 characters of a name.
const maxPrefix = 223

// TemplatePatch is the revision data for a pod template: a strategic
// merge patch replacing spec.template. The template goes through a
// generic map first so its keys come out sorted, as upstream's do; equal
// templates thus give equal bytes and the same hash.
func TemplatePatch(t *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return nil, err
	}
	tmpl["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
}

// Template reads back the pod template a revision recorded. The
// "$patch" directive replaces the whole template, so decoding the
// template is applying the patch.
func Template(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var patch struct {
		Spec struct {
			Template *corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &patch); err != nil {
		return nil, fmt.Errorf("revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	if patch.Spec.Template == nil {
		return nil, fmt.Errorf("revision %s/%s holds no pod template", rev.Namespace, rev.Name)
	}
	return patch.Spec.Template, nil
}

// Hash is the name suffix of a revision with data: FNV-32 over the data
// and the collision count, encoded with the API's vowel-free alphabet.
func Hash(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// Name is "<prefix>-<hash>", the prefix cut to fit a name.
func Name(prefix, hash string) string {
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return prefix + "-" + hash
}

// New returns the revision number revision of owner holding data, named
// for its hash, labelled with the template's labels plus hashLabel=hash,
// and controlled by owner.
func New(owner metav1.Object, gvk schema.GroupVersionKind, templateLabels map[string]string, hashLabel string, data []byte, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	labels := make(map[string]string, len(templateLabels)+1)
	for k, v := range templateLabels {
		labels[k] = v
	}
	hash := Hash(data, collisionCount)
	labels[hashLabel] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            Name(owner.GetName(), hash),
			Namespace:       owner.GetNamespace(),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: revision,
	}
}

// Equal reports whether two revisions record the same template. The
// bytes normally match exactly; when they do not, the templates are
// compared as values, so a revision written by an older release (whose
// encoding differed, e.g. "creationTimestamp":null in the template's
// metadata) still counts as the same template.
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	if bytes.Equal(a.Data.Raw, b.Data.Raw) {
		return true
	}
	at, err1 := Template(a)
	bt, err2 := Template(b)
	return err1 == nil && err2 == nil && equality.Semantic.DeepEqual(at, bt)
}

// FindEqual returns the revisions that record the same template as rev,
// in the order given.
func FindEqual(revs []*appsv1.ControllerRevision, rev *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revs {
		if Equal(r, rev) {
			out = append(out, r)
		}
	}
	return out
}

// Sort orders revisions oldest first: by revision number, then creation
// time and name so the order never depends on the cache's.
func Sort(revs []*appsv1.ControllerRevision) {
	sort.SliceStable(revs, func(i, j int) bool {
		a, b := revs[i], revs[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// Next is the number a new revision gets: one more than the highest.
func Next(revs []*appsv1.ControllerRevision) int64 {
	var top int64
	for _, r := range revs {
		top = max(top, r.Revision)
	}
	return top + 1
}

// ToDelete picks the revisions to delete so that at most limit
// revisions that are not live remain: the oldest non-live ones. revs
// must be sorted (Sort); live names revisions still in use (the
// workload's current and update revisions, those its pods run).
func ToDelete(revs []*appsv1.ControllerRevision, live func(*appsv1.ControllerRevision) bool, limit int) []*appsv1.ControllerRevision {
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live(r) {
			old = append(old, r)
		}
	}
	if limit < 0 || len(old) <= limit {
		return nil
	}
	return old[:len(old)-limit]
}

// Create writes rev. When its name is taken by a revision recording a
// different template (a hash collision), it bumps *collisionCount and
// tries the next name; the caller must save the count in the owner's
// status so the names stay stable. When an equal revision already holds
// the name, that one is returned.
func Create(ctx context.Context, client kubernetes.Interface, rev *appsv1.ControllerRevision, hashLabel string, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	clone := rev.DeepCopy()
	prefix := ""
	if ref := metav1.GetControllerOfNoCopy(rev); ref != nil {
		prefix = ref.Name
	}
	// A collision needs two templates with the same 32-bit hash; a bound
	// keeps a confused server from looping us forever.
	for range 100 {
		hash := Hash(clone.Data.Raw, collisionCount)
		clone.Name = Name(prefix, hash)
		if clone.Labels == nil {
			clone.Labels = map[string]string{}
		}
		clone.Labels[hashLabel] = hash
		created, err := client.AppsV1().ControllerRevisions(clone.Namespace).Create(ctx, clone, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		existing, err := client.AppsV1().ControllerRevisions(clone.Namespace).Get(ctx, clone.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if Equal(existing, clone) {
			return existing, nil
		}
		*collisionCount++
	}
	return nil, fmt.Errorf("revision %s/%s: too many hash collisions", clone.Namespace, prefix)
}

// SetRevision renumbers rev (a rollback makes an old template the
// newest), retrying once on a conflict with a fresh copy.
func SetRevision(ctx context.Context, client kubernetes.Interface, rev *appsv1.ControllerRevision, n int64) (*appsv1.ControllerRevision, error) {
	if rev.Revision == n {
		return rev, nil
	}
	clone := rev.DeepCopy()
	clone.Revision = n
	out, err := client.AppsV1().ControllerRevisions(rev.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		return out, err
	}
	fresh, err := client.AppsV1().ControllerRevisions(rev.Namespace).Get(ctx, rev.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	fresh.Revision = n
	return client.AppsV1().ControllerRevisions(rev.Namespace).Update(ctx, fresh, metav1.UpdateOptions{})
}
