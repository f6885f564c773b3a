package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/rudder-dev/rudder/internal/admit"
)

// PodSecurity enforces the Pod Security Standards per namespace, as
// upstream's PodSecurity admission plugin does.
//
// A namespace picks a level (privileged, baseline or restricted) and a
// policy version for each of three modes, by label:
//
//	pod-security.kubernetes.io/enforce=restricted       refuse violating pods (403)
//	pod-security.kubernetes.io/enforce-version=v1.30    ... as the checks stood at v1.30
//	pod-security.kubernetes.io/warn=baseline            admit, with a Warning header
//	pod-security.kubernetes.io/audit=restricted         (see below)
//
// Unlabelled modes take the configured defaults (privileged, latest),
// except that an unset warn level follows a stricter enforce label: enforce
// never applies to workload resources, and this way a Deployment in an
// enforcing namespace is still warned about.
//
// What is checked:
//   - pods, on create and on updates that can change what the checks see
//     (images, seccomp annotations, added ephemeral containers): enforce and
//     warn;
//   - workload resources (deployments, replicasets, statefulsets,
//     daemonsets, jobs, cronjobs, replicationcontrollers, podtemplates), on
//     their pod template: warn only, never enforce, so a controller's pods
//     are refused, not the object that would make them;
//   - namespaces: bad label values are a 422, and tightening the enforce
//     level warns about the existing pods that would now be refused.
//
// Exempt usernames, namespaces and runtime classes skip the checks.
//
// Audit mode records violations on the audit event upstream; rudder has no
// audit log yet, so audit labels are validated and otherwise unused.
type PodSecurity struct {
	namespaces NamespaceGetter
	objects    ObjectSource
	defaults   psPolicy
	exempt     struct{ users, namespaces, runtimeClasses map[string]bool }
	registry   *psRegistry

	// Bounds on the existing-pods check of a namespace label change, so a
	// huge namespace cannot stall the write.
	maxPodsToCheck int
	podCheckBudget time.Duration
}

// PodSecurityConfig configures PodSecurity. Defaults and Exemptions have
// the shape (and JSON names) of upstream's PodSecurityConfiguration.
type PodSecurityConfig struct {
	// Namespaces and Objects read cluster state (the API server implements
	// both). Objects lists a namespace's pods; without it a tightened
	// enforce level is not checked against existing pods.
	Namespaces NamespaceGetter `json:"-"`
	Objects    ObjectSource    `json:"-"`

	Defaults   PodSecurityDefaults   `json:"defaults"`
	Exemptions PodSecurityExemptions `json:"exemptions"`
}

// PodSecurityExemptions lists what is never checked.
type PodSecurityExemptions struct {
	Usernames      []string `json:"usernames,omitempty"`
	Namespaces     []string `json:"namespaces,omitempty"`
	RuntimeClasses []string `json:"runtimeClasses,omitempty"`
}

// Validate reports configuration errors (bad default levels or versions,
// empty exemptions); NewPodSecurity copes with them but should not be
// given them.
func (c PodSecurityConfig) Validate() error {
	var errs []error
	if _, err := c.Defaults.policy(); err != nil {
		errs = append(errs, err)
	}
	for name, list := range map[string][]string{"usernames": c.Exemptions.Usernames, "namespaces": c.Exemptions.Namespaces, "runtimeClasses": c.Exemptions.RuntimeClasses} {
		for i, v := range list {
			if v == "" {
				errs = append(errs, fmt.Errorf("exemptions.%s[%d]: must not be empty", name, i))
			}
		}
	}
	return errors.Join(errs...)
}

// ParsePodSecurityConfiguration reads an upstream PodSecurityConfiguration
// (YAML or JSON, pod-security.admission.config.k8s.io v1, v1beta1 or
// v1alpha1), as given to --admission-control-config-file.
func ParsePodSecurityConfiguration(data []byte) (PodSecurityConfig, error) {
	var doc struct {
		metav1.TypeMeta `json:",inline"`
		PodSecurityConfig
	}
	if err := utilyaml.Unmarshal(data, &doc); err != nil {
		return PodSecurityConfig{}, fmt.Errorf("PodSecurityConfiguration: %w", err)
	}
	gv, err := schema.ParseGroupVersion(doc.APIVersion)
	if err != nil || gv.Group != "pod-security.admission.config.k8s.io" || doc.Kind != "PodSecurityConfiguration" {
		return PodSecurityConfig{}, fmt.Errorf("PodSecurityConfiguration: unexpected apiVersion %q kind %q", doc.APIVersion, doc.Kind)
	}
	return doc.PodSecurityConfig, doc.PodSecurityConfig.Validate()
}

// NewPodSecurity returns the plugin. Invalid defaults are logged and fall
// back as bad namespace labels do (a bad enforce level means restricted).
func NewPodSecurity(cfg PodSecurityConfig) *PodSecurity {
	p := &PodSecurity{
		namespaces:     cfg.Namespaces,
		objects:        cfg.Objects,
		registry:       newPSRegistry(psChecks()),
		maxPodsToCheck: 3000,
		podCheckBudget: time.Second,
	}
	var err error
	if p.defaults, err = cfg.Defaults.policy(); err != nil {
		slog.Error("PodSecurity defaults", "err", err)
	}
	set := func(list []string) map[string]bool {
		m := map[string]bool{}
		for _, v := range list {
			m[v] = true
		}
		return m
	}
	p.exempt.users = set(cfg.Exemptions.Usernames)
	p.exempt.namespaces = set(cfg.Exemptions.Namespaces)
	p.exempt.runtimeClasses = set(cfg.Exemptions.RuntimeClasses)
	return p
}

func (*PodSecurity) Name() string { return "PodSecurity" }

var (
	psNamespaces = schema.GroupResource{Resource: "namespaces"}
	psPods       = schema.GroupResource{Resource: "pods"}
	psPodsGVR    = psPods.WithVersion("v1")
	// psNamespaceKind names the namespace in a 422.
	psNamespaceKind = schema.GroupKind{Kind: "Namespace"}
	// psWorkloads are the resources that carry a pod template.
	psWorkloads = map[schema.GroupResource]bool{
		{Resource: "replicationcontrollers"}:                true,
		{Resource: "podtemplates"}:                          true,
		{Group: appsv1.GroupName, Resource: "replicasets"}:  true,
		{Group: appsv1.GroupName, Resource: "deployments"}:  true,
		{Group: appsv1.GroupName, Resource: "statefulsets"}: true,
		{Group: appsv1.GroupName, Resource: "daemonsets"}:   true,
		{Group: batchv1.GroupName, Resource: "jobs"}:        true,
		{Group: batchv1.GroupName, Resource: "cronjobs"}:    true,
	}
	// psIgnoredPodSubresources cannot change a pod's spec. Any other pod
	// subresource (ephemeralcontainers, resize) is checked as an update.
	psIgnoredPodSubresources = map[string]bool{
		"exec": true, "attach": true, "binding": true, "eviction": true,
		"log": true, "portforward": true, "proxy": true, "status": true,
	}
)

// Validate implements Validator.
func (p *PodSecurity) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Create && a.Operation != Update {
		return nil
	}
	switch gr := a.Resource.GroupResource(); {
	case gr == psNamespaces:
		return p.validateNamespace(ctx, a)
	case gr == psPods:
		return p.validatePod(ctx, a)
	case psWorkloads[gr]:
		return p.validateWorkload(ctx, a)
	}
	return nil
}

// validateNamespace refuses bad policy labels and, when the enforce level
// is tightened, warns about existing pods the new level would refuse.
func (p *PodSecurity) validateNamespace(ctx context.Context, a *Attributes) error {
	if a.Subresource != "" {
		return nil
	}
	ns, ok := a.Object.(*corev1.Namespace)
	if !ok {
		return apierrors.NewBadRequest("failed to decode namespace")
	}
	next, errs := psPolicyFor(ns.Labels, p.defaults)
	if a.Operation == Create {
		if len(errs) > 0 {
			return apierrors.NewInvalid(psNamespaceKind, a.Name, errs)
		}
		return nil
	}
	old, ok := a.OldObject.(*corev1.Namespace)
	if !ok {
		return apierrors.NewBadRequest("failed to decode old namespace")
	}
	prev, prevErrs := psPolicyFor(old.Labels, p.defaults)
	// A label that was already bad does not block unrelated updates.
	if len(errs) > 0 && (len(prevErrs) == 0 || !psSameErrors(errs, prevErrs)) {
		return apierrors.NewInvalid(psNamespaceKind, a.Name, errs)
	}
	switch {
	case next.enforce == prev.enforce, next.enforce.level == psPrivileged:
		return nil
	case next.enforce.version == prev.enforce.version && psStrictness(next.enforce.level) <= psStrictness(prev.enforce.level):
		return nil // relaxed: nothing that ran before is refused now
	case p.exempt.namespaces[ns.Name]:
		return nil
	}
	for _, w := range p.checkExistingPods(ctx, ns.Name, next.enforce) {
		admit.AddWarning(ctx, w)
	}
	return nil
}

// checkExistingPods dry-runs a new enforce level against a namespace's
// pods and returns warnings: a summary line, then one line per distinct
// set of reasons naming the first pod (by name) and how many others share
// it. It stops at maxPodsToCheck pods or when the time budget is spent.
func (p *PodSecurity) checkExistingPods(ctx context.Context, namespace string, enforce psLevelVersion) []string {
	if p.objects == nil {
		return nil
	}
	budget := p.podCheckBudget
	if deadline, ok := ctx.Deadline(); ok {
		if half := time.Until(deadline) / 2; half < budget {
			budget = half
		}
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	pods, err := p.listPods(ctx, namespace)
	if err != nil {
		slog.Error("PodSecurity: listing pods", "namespace", namespace, "err", err)
		return []string{"failed to list pods while checking new PodSecurity enforce level"}
	}
	pods = p.prioritize(pods)
	total, checked := len(pods), len(pods)
	if checked > p.maxPodsToCheck {
		checked = p.maxPodsToCheck
	}
	type group struct {
		first string
		count int
	}
	groups := map[string]*group{}
	for i, pod := range pods[:checked] {
		if vs := p.registry.evaluate(enforce, &pod.ObjectMeta, &pod.Spec); len(vs) > 0 {
			reasons := psReasons(vs)
			g := groups[reasons]
			if g == nil {
				g = &group{first: pod.Name}
				groups[reasons] = g
			}
			if pod.Name < g.first {
				g.first = pod.Name
			}
			g.count++
		}
		if ctx.Err() != nil {
			checked = i + 1
			break
		}
	}
	var warnings []string
	if checked < total {
		warnings = append(warnings, fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", checked, total))
	}
	if len(groups) == 0 {
		return warnings
	}
	warnings = append(warnings, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", namespace, enforce.String()))
	var lines []string
	for reasons, g := range groups {
		switch g.count {
		case 1:
			lines = append(lines, fmt.Sprintf("%s: %s", g.first, reasons))
		case 2:
			lines = append(lines, fmt.Sprintf("%s (and 1 other pod): %s", g.first, reasons))
		default:
			lines = append(lines, fmt.Sprintf("%s (and %d other pods): %s", g.first, g.count-1, reasons))
		}
	}
	sort.Strings(lines)
	return append(warnings, lines...)
}

// listPods reads a namespace's pods, fresh: a pod created just before the
// label change must be seen.
func (p *PodSecurity) listPods(ctx context.Context, namespace string) ([]*corev1.Pod, error) {
	objs, err := p.objects.ListObjects(ctx, psPodsGVR, namespace, true)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// prioritize drops pods of exempt runtime classes and puts one pod per
// controller first, so a capped check sees as many distinct pod specs as
// it can.
func (p *PodSecurity) prioritize(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	var replicas []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, pod := range pods {
		if p.exemptRuntimeClass(pod.Spec.RuntimeClassName) {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(pod)
		switch {
		case ref == nil:
			out = append(out, pod)
		case seen[ref.UID]:
			replicas = append(replicas, pod)
		default:
			seen[ref.UID] = true
			out = append(out, pod)
		}
	}
	return append(out, replicas...)
}

func (p *PodSecurity) exemptRuntimeClass(name *string) bool {
	return name != nil && *name != "" && p.exempt.runtimeClasses[*name]
}

func (p *PodSecurity) exemptRequest(a *Attributes) bool {
	if a.Namespace != "" && p.exempt.namespaces[a.Namespace] {
		return true
	}
	return a.User != nil && a.User.Name != "" && p.exempt.users[a.User.Name]
}

// namespacePolicy reads the policy of the request's namespace. A namespace
// that cannot be found gets the defaults (NamespaceLifecycle refuses
// creates there anyway).
func (p *PodSecurity) namespacePolicy(ctx context.Context, name string) (psPolicy, field.ErrorList, error) {
	if p.namespaces == nil {
		return p.defaults, nil, nil
	}
	ns, err := p.namespaces.GetNamespace(ctx, name)
	if err != nil || ns == nil {
		return p.defaults, nil, err
	}
	pol, errs := psPolicyFor(ns.Labels, p.defaults)
	return pol, errs, nil
}

func (p *PodSecurity) validatePod(ctx context.Context, a *Attributes) error {
	if psIgnoredPodSubresources[a.Subresource] || p.exemptRequest(a) {
		return nil
	}
	pol, errs, err := p.namespacePolicy(ctx, a.Namespace)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to lookup namespace %s", a.Namespace))
	}
	if len(errs) == 0 && pol.enforce.level == psPrivileged && pol.warn.level == psPrivileged {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest("failed to decode pod")
	}
	if a.Operation == Update {
		old, ok := a.OldObject.(*corev1.Pod)
		if !ok {
			return apierrors.NewBadRequest("failed to decode old pod")
		}
		if !psSignificantUpdate(pod, old) {
			return nil
		}
	}
	return p.evaluate(ctx, a, pol, &pod.ObjectMeta, &pod.Spec, true)
}

// validateWorkload checks a pod template in warn mode only. Errors reading
// the namespace or the object never block the write: the pods it makes are
// checked on their own.
func (p *PodSecurity) validateWorkload(ctx context.Context, a *Attributes) error {
	if a.Subresource != "" || p.exemptRequest(a) {
		return nil
	}
	pol, errs, err := p.namespacePolicy(ctx, a.Namespace)
	if err != nil {
		slog.Warn("PodSecurity: namespace lookup", "namespace", a.Namespace, "err", err)
		return nil
	}
	if len(errs) == 0 && pol.warn.level == psPrivileged {
		return nil
	}
	meta, spec := psPodTemplate(a.Object)
	if spec == nil {
		return nil
	}
	return p.evaluate(ctx, a, pol, meta, spec, false)
}

// evaluate applies the enforce (when asked) and warn modes to a pod spec.
// A refused request gets no warning: the error says it all.
func (p *PodSecurity) evaluate(ctx context.Context, a *Attributes, pol psPolicy, meta *metav1.ObjectMeta, spec *corev1.PodSpec, enforce bool) error {
	if p.exemptRuntimeClass(spec.RuntimeClassName) {
		return nil
	}
	var enforced []psViolation
	if enforce {
		enforced = p.registry.evaluate(pol.enforce, meta, spec)
		if len(enforced) > 0 {
			return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
				fmt.Errorf("violates PodSecurity %q: %s", pol.enforce.String(), psDetail(enforced)))
		}
	}
	warned := enforced
	if !enforce || pol.warn != pol.enforce {
		warned = p.registry.evaluate(pol.warn, meta, spec)
	}
	if len(warned) > 0 {
		admit.AddWarning(ctx, fmt.Sprintf("would violate PodSecurity %q: %s", pol.warn.String(), psDetail(warned)))
	}
	return nil
}

// psPodTemplate finds the pod template of a workload; nil when it has none
// (a replication controller's template is optional).
func psPodTemplate(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec) {
	var t *corev1.PodTemplateSpec
	switch o := obj.(type) {
	case *corev1.PodTemplate:
		t = &o.Template
	case *corev1.ReplicationController:
		t = o.Spec.Template
	case *appsv1.ReplicaSet:
		t = &o.Spec.Template
	case *appsv1.Deployment:
		t = &o.Spec.Template
	case *appsv1.StatefulSet:
		t = &o.Spec.Template
	case *appsv1.DaemonSet:
		t = &o.Spec.Template
	case *batchv1.Job:
		t = &o.Spec.Template
	case *batchv1.CronJob:
		t = &o.Spec.JobTemplate.Spec.Template
	}
	if t == nil {
		return nil, nil
	}
	return &t.ObjectMeta, &t.Spec
}

// psSignificantUpdate reports whether a pod update can change what the
// checks see. Almost all of a pod's spec is immutable; what may change is
// container images, the seccomp annotations, and the ephemeral containers
// a debugger adds. Labels, status and the like are not re-checked, so a
// pod admitted under an older policy can still be updated.
func psSignificantUpdate(pod, old *corev1.Pod) bool {
	if pod.Annotations[corev1.SeccompPodAnnotationKey] != old.Annotations[corev1.SeccompPodAnnotationKey] {
		return true
	}
	if len(pod.Spec.Containers) != len(old.Spec.Containers) || len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return true
	}
	changed := func(c, o *corev1.Container) bool {
		key := corev1.SeccompContainerAnnotationKeyPrefix + c.Name
		return c.Image != o.Image || pod.Annotations[key] != old.Annotations[key]
	}
	for i := range pod.Spec.Containers {
		if changed(&pod.Spec.Containers[i], &old.Spec.Containers[i]) {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if changed(&pod.Spec.InitContainers[i], &old.Spec.InitContainers[i]) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		var o *corev1.Container
		for j := range old.Spec.EphemeralContainers {
			if old.Spec.EphemeralContainers[j].Name == c.Name {
				o = (*corev1.Container)(&old.Spec.EphemeralContainers[j].EphemeralContainerCommon)
				break
			}
		}
		if o == nil || changed(c, o) {
			return true
		}
	}
	return false
}
