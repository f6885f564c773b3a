package apiserver

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// pods/{name}/ephemeralcontainers: the one way to change a running pod's
// containers, used by `kubectl debug`. The client sends the whole pod
// (PUT) or a patch of it; only spec.ephemeralContainers is taken from it,
// and containers already there may be neither removed nor changed: an
// ephemeral container, once started, stays as it was until the pod goes.

// ephemeralMirrorAnnotation marks a static pod's mirror, which the kubelet owns.
const ephemeralMirrorAnnotation = "kubernetes.io/config.mirror"

// ephemeralContainers serves GET, PUT and PATCH on the subresource.
func (h *resourceHandler) ephemeralContainers(w http.ResponseWriter, r *http.Request, namespace, name string) {
	if r.Method == http.MethodGet {
		h.get(w, r, namespace, name)
		return
	}
	var (
		body      *corev1.Pod
		patchBody []byte
		isDry     bool
		err       error
	)
	if r.Method == http.MethodPatch {
		if patchBody, err = readBody(r); err == nil {
			isDry, err = dryRun(r)
		}
	} else {
		var obj runtime.Object
		if obj, isDry, err = h.readObject(w, r, h.kindRef()); err == nil {
			body = obj.(*corev1.Pod)
			if body.Name != name {
				err = apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", body.Name, name))
			}
		}
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	patchType := contentType(r)
	req := updateRequest{namespace: namespace, name: name, subresource: "ephemeralcontainers", user: requestUser(r), dryRun: isDry,
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			want, pinned := body, false
			if want != nil {
				want = want.DeepCopy()
				pinned = want.ResourceVersion != ""
			} else {
				patched, p, err := h.patchObject(w, r, cur, patchType, patchBody)
				if err != nil {
					return nil, false, err
				}
				want, pinned = patched.(*corev1.Pod), p
			}
			old := cur.(*corev1.Pod)
			next := old.DeepCopy()
			next.Spec.EphemeralContainers = want.Spec.EphemeralContainers
			next.ResourceVersion = want.ResourceVersion
			if h.res.Default != nil {
				h.res.Default(next)
			}
			if err := h.invalid(next, validateEphemeralUpdate(next, old)); err != nil {
				return nil, false, err
			}
			return next, pinned, nil
		},
	}
	out, _, err := h.guaranteedUpdate(r.Context(), req)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.reply(w, r, http.StatusOK, out)
}

// ephemeralAllowed are the fields an ephemeral container may set; any
// other (ports, probes, resources, lifecycle, ...) would make it part of
// the workload, which it must not be.
var ephemeralAllowed = map[string]bool{
	"name": true, "image": true, "command": true, "args": true, "workingDir": true, "envFrom": true, "env": true,
	"volumeMounts": true, "volumeDevices": true, "terminationMessagePath": true, "terminationMessagePolicy": true,
	"imagePullPolicy": true, "securityContext": true, "stdin": true, "stdinOnce": true, "tty": true,
}

// validateEphemeralUpdate checks the pod with its new ephemeral
// containers, then that the old ones are all still there, unchanged.
func validateEphemeralUpdate(pod, old *corev1.Pod) field.ErrorList {
	if _, ok := old.Annotations[ephemeralMirrorAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	specPath := field.NewPath("spec", "ephemeralContainers")
	allErrs := registry.ValidateMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, registry.ValidatePodSpec(&pod.Spec, field.NewPath("spec"))...)
	for i := range pod.Spec.EphemeralContainers {
		allErrs = append(allErrs, ephemeralFieldErrs(&pod.Spec.EphemeralContainers[i], specPath.Index(i), allErrs)...)
	}
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range pod.Spec.EphemeralContainers {
		byName[pod.Spec.EphemeralContainers[i].Name] = &pod.Spec.EphemeralContainers[i]
	}
	for _, o := range old.Spec.EphemeralContainers {
		n, ok := byName[o.Name]
		switch {
		case !ok:
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", o.Name)))
		case !apiequality.Semantic.DeepEqual(o, *n):
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n", o.Name)))
		}
	}
	return allErrs
}

// ephemeralFieldErrs reports fields an ephemeral container may not set
// that the pod spec validation has not reported already.
func ephemeralFieldErrs(ec *corev1.EphemeralContainer, p *field.Path, reported field.ErrorList) field.ErrorList {
	const msg = "cannot be set for an Ephemeral Container"
	set := map[string]bool{
		"ports": len(ec.Ports) > 0, "resources": len(ec.Resources.Limits)+len(ec.Resources.Requests)+len(ec.Resources.Claims) > 0,
		"resizePolicy": len(ec.ResizePolicy) > 0, "restartPolicy": ec.RestartPolicy != nil, "restartPolicyRules": len(ec.RestartPolicyRules) > 0,
		"lifecycle": ec.Lifecycle != nil, "livenessProbe": ec.LivenessProbe != nil, "readinessProbe": ec.ReadinessProbe != nil,
		"startupProbe": ec.StartupProbe != nil,
	}
	var allErrs field.ErrorList
	for _, name := range []string{"ports", "resources", "resizePolicy", "restartPolicy", "restartPolicyRules", "lifecycle", "livenessProbe", "readinessProbe", "startupProbe"} {
		if set[name] && !ephemeralAllowed[name] && !ephemeralReported(reported, p.Child(name), field.ErrorTypeForbidden) {
			allErrs = append(allErrs, field.Forbidden(p.Child(name), msg))
		}
	}
	for i, vm := range ec.VolumeMounts {
		vp := p.Child("volumeMounts").Index(i)
		if vm.SubPath != "" {
			allErrs = append(allErrs, field.Forbidden(vp.Child("subPath"), msg))
		}
		if vm.SubPathExpr != "" {
			allErrs = append(allErrs, field.Forbidden(vp.Child("subPathExpr"), msg))
		}
	}
	return allErrs
}

func ephemeralReported(errs field.ErrorList, p *field.Path, t field.ErrorType) bool {
	for _, e := range errs {
		if e.Field == p.String() && e.Type == t {
			return true
		}
	}
	return false
}
