package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ServiceAccount gives every new pod an identity and the credentials to
// use it, as upstream's plugin of that name does:
//
//   - a pod naming no service account runs as "default";
//   - the service account must exist (403 "error looking up service
//     account ns/name: serviceaccount "name" not found" otherwise);
//   - unless automountServiceAccountToken is false on the pod or, when the
//     pod does not say, on the account, the pod gets a projected volume
//     "kube-api-access-xxxxx" (a bound token that expires in 3607 s, the
//     cluster CA from ConfigMap kube-root-ca.crt, the namespace from the
//     downward API) mounted read-only at
//     /var/run/secrets/kubernetes.io/serviceaccount in every container and
//     init container that has nothing mounted there;
//   - a pod without imagePullSecrets gets the account's;
//   - an account annotated kubernetes.io/enforce-mountable-secrets=true
//     limits the pod to the secrets listed in the account;
//   - a mirror pod (a kubelet's static pod) is never changed, and may
//     reference no service account, no secret and no token projection.
//
// Only creates are mutated: a pod's spec is immutable after that, except
// for ephemeral containers, whose secret references are checked on the
// ephemeralcontainers subresource.
type ServiceAccount struct {
	Objects ObjectSource
	// Attempts is how often a missing "default" account is looked up
	// before the pod is refused (10); the serviceaccount controller
	// creates it just after its namespace, so a pod racing a new
	// namespace waits a little rather than fail. Other accounts are
	// looked up once.
	Attempts int
	// RetryInterval is the pause between attempts (100-200 ms, random
	// once per request, so racing requests spread out).
	RetryInterval time.Duration
	// Suffix names new token volumes (5 random characters).
	Suffix func() string
}

const (
	saDefaultName = "default"
	// saEnforceMountableSecrets on an account limits its pods to the
	// secrets the account lists.
	saEnforceMountableSecrets = "kubernetes.io/enforce-mountable-secrets"
	// saVolumePrefix starts the name of the token volume.
	saVolumePrefix = "kube-api-access-"
	// saTokenMountPath is where containers find the token, the CA and
	// the namespace.
	saTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// saTokenExpirationSeconds is upstream's bound-token lifetime for
	// automounted tokens: an hour and 7 s, the odd value marking tokens
	// the server may extend for clients that do not refresh them.
	saTokenExpirationSeconds = 3607
	// saMirrorAnnotation marks a mirror pod.
	saMirrorAnnotation = corev1.MirrorPodAnnotationKey
)

func (ServiceAccount) Name() string { return "ServiceAccount" }

// saPod returns the pod a request is about, or nil when the plugin has
// nothing to do with it.
func saPod(a *Attributes) *corev1.Pod {
	if a.Resource.GroupResource() != podsResource || (a.Subresource != "" && a.Subresource != "ephemeralcontainers") {
		return nil
	}
	pod, _ := a.Object.(*corev1.Pod)
	return pod
}

// Admit implements Mutator.
func (p ServiceAccount) Admit(ctx context.Context, a *Attributes) error {
	pod := saPod(a)
	if pod == nil || a.Operation != Create {
		return nil
	}
	// The kubelet deletes a mirror pod whose spec differs from its static
	// pod's, so it is only checked.
	if _, mirror := pod.Annotations[saMirrorAnnotation]; mirror {
		return p.Validate(ctx, a)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = saDefaultName
	}
	sa, err := p.account(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return forbiddenFor(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if saAutomount(sa, pod) {
		p.mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i].Name = s.Name
		}
	}
	return p.Validate(ctx, a)
}

// Validate implements Validator.
func (p ServiceAccount) Validate(ctx context.Context, a *Attributes) error {
	pod := saPod(a)
	if pod == nil {
		return nil
	}
	if a.Operation == Update && a.Subresource == "ephemeralcontainers" {
		return p.validateEphemeral(ctx, a, pod)
	}
	if a.Operation != Create {
		return nil
	}
	if _, mirror := pod.Annotations[saMirrorAnnotation]; mirror {
		return saValidateMirror(a, pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		return forbiddenFor(a, fmt.Errorf("no service account specified for pod %s/%s", a.Namespace, pod.Name))
	}
	sa, err := p.account(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return forbiddenFor(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if saEnforces(sa) {
		if err := saLimitSecretReferences(sa, pod); err != nil {
			return forbiddenFor(a, err)
		}
	}
	return nil
}

func saValidateMirror(a *Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return forbiddenFor(a, fmt.Errorf("a mirror pod may not reference service accounts"))
	}
	if len(saPodSecretNames(pod)) > 0 {
		return forbiddenFor(a, fmt.Errorf("a mirror pod may not reference secrets"))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return forbiddenFor(a, fmt.Errorf("a mirror pod may not use ServiceAccountToken volume projections"))
			}
		}
	}
	return nil
}

// account finds a service account: the cache, then storage, and for
// "default" a few more times while its controller catches up. A missing
// account is a NotFound error.
func (p ServiceAccount) account(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	attempts := 1
	if name == saDefaultName {
		attempts = p.Attempts
		if attempts <= 0 {
			attempts = 10
		}
	}
	interval := p.RetryInterval
	if interval <= 0 {
		interval = time.Duration(100+rand.IntN(100)) * time.Millisecond
	}
	for i := 0; i < attempts; i++ {
		if i > 0 {
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		obj, err := p.Objects.GetObject(ctx, serviceAccountsGVR, namespace, name)
		if err != nil {
			return nil, err
		}
		if sa, ok := obj.(*corev1.ServiceAccount); ok {
			return sa, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
}

// saAutomount: the pod's choice, else the account's, else yes.
func saAutomount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken mounts the token volume in every container and init
// container that has nothing at the token path, and adds the volume if
// any does. A pod that already has a kube-api-access volume keeps it.
func (p ServiceAccount) mountToken(pod *corev1.Pod) {
	volume, have := "", false
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, saVolumePrefix) {
			volume, have = v.Name, true
			break
		}
	}
	if volume == "" {
		suffix := p.Suffix
		if suffix == nil {
			suffix = func() string { return utilrand.String(5) }
		}
		volume = saVolumePrefix + suffix()
	}
	mount := corev1.VolumeMount{Name: volume, ReadOnly: true, MountPath: saTokenMountPath}
	needed := false
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !saMountsTokenPath(&list[i]) {
				list[i].VolumeMounts = append(list[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !have {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: volume,
			VolumeSource: corev1.VolumeSource{Projected: saTokenVolumeSource()}})
	}
}

func saMountsTokenPath(c *corev1.Container) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == saTokenMountPath {
			return true
		}
	}
	return false
}

// saTokenVolumeSource returns the projected source of an automounted
// token volume. Admission runs after defaulting, so the mode is set here.
func saTokenVolumeSource() *corev1.ProjectedVolumeSource {
	mode := corev1.ProjectedVolumeSourceDefaultMode
	expiry := int64(saTokenExpirationSeconds)
	return &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
}

func saEnforces(sa *corev1.ServiceAccount) bool {
	v, ok := sa.Annotations[saEnforceMountableSecrets]
	if !ok {
		return false
	}
	b, _ := strconv.ParseBool(v)
	return b
}

// saLimitSecretReferences refuses secret volumes, env references and pull
// secrets the account does not list.
func saLimitSecretReferences(sa *corev1.ServiceAccount, pod *corev1.Pod) error {
	mountable := sets.New[string]()
	for _, s := range sa.Secrets {
		mountable.Insert(s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && !mountable.Has(v.Secret.SecretName) {
			return fmt.Errorf("volume with secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", v.Secret.SecretName, sa.Name)
		}
	}
	if err := saCheckEnv(pod.Spec.InitContainers, "init container", mountable, sa.Name); err != nil {
		return err
	}
	if err := saCheckEnv(pod.Spec.Containers, "container", mountable, sa.Name); err != nil {
		return err
	}
	pull := sets.New[string]()
	for _, s := range sa.ImagePullSecrets {
		pull.Insert(s.Name)
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		if !pull.Has(ref.Name) {
			return fmt.Errorf("imagePullSecrets[%d].name=\"%s\" is not allowed because service account %s does not reference that imagePullSecret", i, ref.Name, sa.Name)
		}
	}
	return nil
}

func saCheckEnv(containers []corev1.Container, kind string, mountable sets.Set[string], account string) error {
	for _, c := range containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !mountable.Has(e.ValueFrom.SecretKeyRef.Name) {
				return fmt.Errorf("%s %s with envVar %s referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret",
					kind, c.Name, e.Name, e.ValueFrom.SecretKeyRef.Name, account)
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil && !mountable.Has(e.SecretRef.Name) {
				return fmt.Errorf("%s %s with envFrom referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret",
					kind, c.Name, e.SecretRef.Name, account)
			}
		}
	}
	return nil
}

// validateEphemeral checks the secrets that ephemeral containers, added
// to a running pod, reference.
func (p ServiceAccount) validateEphemeral(ctx context.Context, a *Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName == "" {
		return forbiddenFor(a, fmt.Errorf("no service account specified for pod %s/%s", a.Namespace, pod.Name))
	}
	sa, err := p.account(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return forbiddenFor(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if !saEnforces(sa) {
		return nil
	}
	mountable := sets.New[string]()
	for _, s := range sa.Secrets {
		mountable.Insert(s.Name)
	}
	containers := make([]corev1.Container, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		containers[i] = corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
	if err := saCheckEnv(containers, "ephemeral container", mountable, sa.Name); err != nil {
		return forbiddenFor(a, err)
	}
	return nil
}

// saPodSecretNames lists every secret a pod refers to: pull secrets, env
// of all containers, and every volume kind that takes a secret.
func saPodSecretNames(pod *corev1.Pod) []string {
	var names []string
	add := func(n string) {
		if n != "" {
			names = append(names, n)
		}
	}
	ref := func(r *corev1.LocalObjectReference) {
		if r != nil {
			add(r.Name)
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(s.Name)
	}
	env := func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		env(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		env(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		env(&c)
	}
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.Secret != nil:
			add(s.Secret.SecretName)
		case s.AzureFile != nil:
			add(s.AzureFile.SecretName)
		case s.CephFS != nil:
			ref(s.CephFS.SecretRef)
		case s.Cinder != nil:
			ref(s.Cinder.SecretRef)
		case s.FlexVolume != nil:
			ref(s.FlexVolume.SecretRef)
		case s.RBD != nil:
			ref(s.RBD.SecretRef)
		case s.ScaleIO != nil:
			ref(s.ScaleIO.SecretRef)
		case s.ISCSI != nil:
			ref(s.ISCSI.SecretRef)
		case s.StorageOS != nil:
			ref(s.StorageOS.SecretRef)
		case s.CSI != nil:
			ref(s.CSI.NodePublishSecretRef)
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				if src.Secret != nil {
					add(src.Secret.Name)
				}
			}
		}
	}
	return names
}
