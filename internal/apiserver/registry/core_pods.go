package registry

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The pod strategy. A pod's spec is nearly immutable once created: an
// update may change only images, activeDeadlineSeconds (downwards),
// tolerations (additions), scheduling gates (removals) and a negative grace
// period to 1. Everything else the kubelet and scheduler write goes through
// /status or /binding.

func defaultPod(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	DefaultPodSpec(&pod.Spec)
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			defaultRequestsFromLimits(&list[i].Resources)
		}
	}
	if pod.Spec.EnableServiceLinks == nil {
		enable := corev1.DefaultEnableServiceLinks
		pod.Spec.EnableServiceLinks = &enable
	}
	if pod.Spec.HostNetwork {
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				for j := range list[i].Ports {
					if list[i].Ports[j].HostPort == 0 {
						list[i].Ports[j].HostPort = list[i].Ports[j].ContainerPort
					}
				}
			}
		}
	}
	// The API carries podIP and podIPs (hostIP and hostIPs); keep the single
	// one the first of the list, whichever a client wrote.
	st := &pod.Status
	if len(st.PodIPs) == 0 && st.PodIP != "" {
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	} else if len(st.PodIPs) > 0 {
		st.PodIP = st.PodIPs[0].IP
	}
	if len(st.HostIPs) == 0 && st.HostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	} else if len(st.HostIPs) > 0 {
		st.HostIP = st.HostIPs[0].IP
	}
	// preemptionPolicy and priority are not defaulted here: the Priority
	// admission plugin sets both from the pod's PriorityClass, as upstream.
}

// defaultRequestsFromLimits makes a container that states only limits
// request the same, so that it is Guaranteed rather than BestEffort.
func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}

func prepareCreatePod(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	pod.Status = corev1.PodStatus{
		Phase:    corev1.PodPending,
		QOSClass: podQOSClass(&pod.Spec),
	}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []corev1.PodCondition{{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
}

func validatePodObject(pod *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := validateCoreMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	allErrs = append(allErrs, validatePodSpec(&pod.Spec, specPath, true)...)
	if pod.Spec.ServiceAccountName == "" {
		for vi, vol := range pod.Spec.Volumes {
			if vol.Projected == nil {
				continue
			}
			for si, src := range vol.Projected.Sources {
				if src.ServiceAccountToken != nil {
					allErrs = append(allErrs, field.Forbidden(specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	for _, l := range []struct {
		name       string
		containers []corev1.Container
	}{{"containers", pod.Spec.Containers}, {"initContainers", pod.Spec.InitContainers}} {
		for i, c := range l.containers {
			if strings.TrimSpace(c.Image) != c.Image {
				allErrs = append(allErrs, field.Invalid(specPath.Child(l.name).Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
			}
		}
	}
	return allErrs
}

func validatePod(obj runtime.Object) field.ErrorList {
	pod := obj.(*corev1.Pod)
	allErrs := validatePodObject(pod)
	specPath := field.NewPath("spec")
	if len(pod.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return allErrs
}

var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

func validatePodUpdate(obj, old runtime.Object) field.ErrorList {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	allErrs := validateCoreMetaUpdate(&pod.ObjectMeta, &oldPod.ObjectMeta)
	allErrs = append(allErrs, validatePodObject(pod)...)
	specPath := field.NewPath("spec")

	for _, l := range []struct {
		name     string
		new, old []corev1.Container
	}{{"containers", pod.Spec.Containers, oldPod.Spec.Containers}, {"initContainers", pod.Spec.InitContainers, oldPod.Spec.InitContainers}} {
		if len(l.new) != len(l.old) {
			return append(allErrs, field.Forbidden(specPath.Child(l.name), "pod updates may not add or remove containers"))
		}
	}

	adsPath := specPath.Child("activeDeadlineSeconds")
	if ads := pod.Spec.ActiveDeadlineSeconds; ads != nil {
		if *ads < 0 || *ads > math.MaxInt32 {
			return append(allErrs, field.Invalid(adsPath, *ads, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if old := oldPod.Spec.ActiveDeadlineSeconds; old != nil && *old < *ads {
			return append(allErrs, field.Invalid(adsPath, *ads, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(adsPath, pod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}
	allErrs = append(allErrs, validateOnlyAddedTolerations(pod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)
	allErrs = append(allErrs, validateOnlyDeletedSchedulingGates(pod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if equality.Semantic.DeepEqual(pod.Spec, oldPod.Spec) {
		return allErrs
	}
	// Copy the mutable fields from the old spec; whatever still differs was
	// not allowed to change.
	munged := *pod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = oldPod.Spec.SchedulingGates
	munged.Tolerations = oldPod.Spec.Tolerations
	munged.EphemeralContainers = oldPod.Spec.EphemeralContainers
	if g := oldPod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = g
	}
	if len(oldPod.Spec.SchedulingGates) > 0 && !equality.Semantic.DeepEqual(munged.NodeSelector, oldPod.Spec.NodeSelector) {
		// A gated pod may gain node selector terms before it is scheduled.
		allErrs = append(allErrs, validateNodeSelectorAdditions(munged.NodeSelector, oldPod.Spec.NodeSelector, specPath.Child("nodeSelector"))...)
		munged.NodeSelector = oldPod.Spec.NodeSelector
	}
	if !equality.Semantic.DeepEqual(munged, oldPod.Spec) {
		allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v",
			strings.Join(updatablePodSpecFields, ","), specDiff(oldPod.Spec, munged))))
	}
	return allErrs
}

// specDiff renders what changed for the error message, as upstream does.
// go-cmp panics on types it cannot compare; the diff is a courtesy, so a
// panic only loses it.
func specDiff(old, new corev1.PodSpec) (diff string) {
	defer func() {
		if recover() != nil {
			diff = ""
		}
	}()
	return cmp.Diff(old, new)
}

func validateNodeSelectorAdditions(new, old map[string]string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for k, v := range old {
		if nv, ok := new[k]; !ok || nv != v {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(k), new[k], "field is immutable"))
		}
	}
	return allErrs
}

func validateOnlyAddedTolerations(newTols, oldTols []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range oldTols {
		found := false
		for _, t := range newTols {
			o := old
			// Only tolerationSeconds of an existing toleration may change.
			o.TolerationSeconds = t.TolerationSeconds
			if reflect.DeepEqual(o, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validateTolerations(newTols, fldPath)
}

func validateOnlyDeletedSchedulingGates(newGates, oldGates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	old := sets.New[string]()
	for _, g := range oldGates {
		old.Insert(g.Name)
	}
	var allErrs field.ErrorList
	for i, g := range newGates {
		if !old.Has(g.Name) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("name"),
				fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return allErrs
}

// podSystemConditions need no domain prefix; other condition types must be
// qualified names.
var podSystemConditions = sets.New(corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized,
	corev1.ContainersReady, corev1.DisruptionTarget, corev1.PodReadyToStartContainers,
	corev1.PodResizePending, corev1.PodResizeInProgress)

func validatePodStatusUpdate(obj, old runtime.Object) field.ErrorList {
	pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
	allErrs := validateCoreMetaUpdate(&pod.ObjectMeta, &oldPod.ObjectMeta)
	statusPath := field.NewPath("status")
	for i, c := range pod.Status.Conditions {
		if !podSystemConditions.Has(c.Type) {
			// Upstream names this path segment "Type".
			allErrs = append(allErrs, validateQualifiedName(string(c.Type), statusPath.Child("conditions").Index(i).Child("Type"))...)
		}
	}
	if pod.Spec.NodeName != oldPod.Spec.NodeName {
		allErrs = append(allErrs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if n := pod.Status.NominatedNodeName; n != oldPod.Status.NominatedNodeName && n != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, n, statusPath.Child("nominatedNodeName"))...)
	}
	allErrs = append(allErrs, validateContainerStateTransition(pod.Status.ContainerStatuses, oldPod.Status.ContainerStatuses,
		statusPath.Child("containerStatuses"), oldPod.Spec.RestartPolicy, nil)...)
	allErrs = append(allErrs, validateContainerStateTransition(pod.Status.InitContainerStatuses, oldPod.Status.InitContainerStatuses,
		statusPath.Child("initContainerStatuses"), oldPod.Spec.RestartPolicy, oldPod.Spec.InitContainers)...)
	allErrs = append(allErrs, validateIPList(pod.Status.PodIPs, func(ip corev1.PodIP) string { return ip.IP }, statusPath.Child("podIPs"))...)
	allErrs = append(allErrs, validateIPList(pod.Status.HostIPs, func(ip corev1.HostIP) string { return ip.IP }, statusPath.Child("hostIPs"))...)
	if len(pod.Status.HostIPs) > 0 && pod.Status.HostIP != pod.Status.HostIPs[0].IP {
		allErrs = append(allErrs, field.Invalid(statusPath.Child("hostIPs").Index(0).Child("ip"), pod.Status.HostIPs[0].IP, "must be equal to `hostIP`"))
	}
	return allErrs
}

// validateContainerStateTransition stops a status write from bringing a
// container back from terminated when the pod would never restart it.
// initContainers is nil for regular containers; restartable init
// containers may always restart.
func validateContainerStateTransition(newStatuses, oldStatuses []corev1.ContainerStatus, fldPath *field.Path, policy corev1.RestartPolicy, initContainers []corev1.Container) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	var allErrs field.ErrorList
	for i, old := range oldStatuses {
		if old.State.Terminated == nil {
			continue
		}
		if old.State.Terminated.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure {
			continue
		}
		restartable := false
		for j := range initContainers {
			if initContainers[j].Name == old.Name {
				restartable = isRestartableInitContainer(&initContainers[j])
				break
			}
		}
		if restartable {
			continue
		}
		for _, s := range newStatuses {
			if s.Name == old.Name && s.State.Terminated == nil {
				allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return allErrs
}

func validateIPList[T any](ips []T, ipOf func(T) string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	v4, v6 := 0, 0
	for i, entry := range ips {
		ip := ipOf(entry)
		errs := validation.IsValidIP(fldPath.Index(i), ip)
		allErrs = append(allErrs, errs...)
		if seen.Has(ip) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), entry))
		}
		seen.Insert(ip)
		if len(errs) == 0 {
			if strings.Contains(ip, ":") {
				v6++
			} else {
				v4++
			}
		}
	}
	if len(ips) > 1 && (v4 > 1 || v6 > 1 || len(ips) > 2) {
		allErrs = append(allErrs, field.Invalid(fldPath, ips, "may specify no more than one IP for each IP family"))
	}
	return allErrs
}

func podFields(obj runtime.Object) fields.Set {
	pod := obj.(*corev1.Pod)
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}
