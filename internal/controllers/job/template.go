package job

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

var jobKind = batchv1.SchemeGroupVersion.WithKind("Job")

// maxGeneratedNameLength is the longest generateName prefix the API
// server keeps whole: it appends five random characters to a 63-character
// name at most.
const maxGeneratedNameLength = 63 - 5

// podFromTemplate builds the pod to create for job: the template's
// labels, annotations, finalizers and spec, plus the tracking finalizer
// and a controller reference. index is the completion index for an
// Indexed job (unknownIndex otherwise); replacing is the failed pod the
// new one replaces within its index (backoffLimitPerIndex), or nil.
func podFromTemplate(job *batchv1.Job, index int, replacing *corev1.Pod) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			GenerateName:    podNamePrefix(job.Name),
			Labels:          maps.Clone(t.Labels),
			Annotations:     maps.Clone(t.Annotations),
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		},
		Spec: t.Spec,
	}
	if !slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer) {
		pod.Finalizers = append(pod.Finalizers, batchv1.JobTrackingFinalizer)
	}
	if index == unknownIndex {
		return pod
	}
	ix := strconv.Itoa(index)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = ix
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = ix
	// The index reaches the containers through the downward API, from
	// the label, as upstream's controller wires it.
	for i := range pod.Spec.InitContainers {
		addIndexEnv(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		addIndexEnv(&pod.Spec.Containers[i])
	}
	// A stable hostname per index; with the template's subdomain and a
	// headless Service of that name, pods reach each other as
	// <job>-<index>.<subdomain>.
	pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
	pod.GenerateName = indexedNamePrefix(job.Name, index)
	if job.Spec.BackoffLimitPerIndex != nil {
		counted, ignored := replacementFailureCounts(job, replacing)
		pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(counted))
		if ignored > 0 {
			pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
		}
	}
	return pod
}

func addIndexEnv(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == completionIndexEnv {
			return // the user's own value wins
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{
		Name: completionIndexEnv,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation),
		}},
	})
}

// replacementFailureCounts carries an index's failure counts to the pod
// replacing replaced: the counted failures, plus one if replaced's
// failure counts; and the ignored ones, plus one if an Ignore rule
// matched it.
func replacementFailureCounts(job *batchv1.Job, replaced *corev1.Pod) (counted, ignored int32) {
	if replaced == nil {
		return 0, 0
	}
	counted = indexFailureCount(replaced)
	ignored = annotationInt32(replaced, batchv1.JobIndexIgnoredFailureCountAnnotation)
	if matchPodFailurePolicy(job.Spec.PodFailurePolicy, replaced).counts {
		counted++
	} else {
		ignored++
	}
	return counted, ignored
}

// podNamePrefix is "<job>-", or the bare name when the dash would make
// an invalid name.
func podNamePrefix(name string) string {
	prefix := name + "-"
	if len(validation.IsDNS1123Subdomain(prefix+"x")) != 0 {
		return name
	}
	return prefix
}

// indexedNamePrefix is "<job>-<index>-", the job name shortened when the
// whole would not fit in a generated name.
func indexedNamePrefix(name string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	if len(name)+len(suffix) > maxGeneratedNameLength {
		name = name[:maxGeneratedNameLength-len(suffix)]
	}
	return name + suffix
}
