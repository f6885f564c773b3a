package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/admit"
)

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// scaleOf renders an object's /scale view.
func (h *resourceHandler) scaleOf(obj runtime.Object) *autoscalingv1.Scale {
	spec, status, selector := h.res.Scale.Get(obj)
	m := objectMeta(obj)
	sc := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}
	sc.GetObjectKind().SetGroupVersionKind(scaleGVK)
	return sc
}

// scale serves GET, PUT and PATCH on /scale: the replica count of the
// parent object, read and written through the parent's update path.
func (h *resourceHandler) scale(w http.ResponseWriter, r *http.Request, namespace, name string) {
	t, ok := negotiate(r, false)
	if !ok {
		t = target{media: mediaJSON}
	}
	if r.Method == http.MethodGet {
		obj, _, err := h.getStored(r.Context(), namespace, name)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		h.s.writeObject(w, r, t, http.StatusOK, nil, h.scaleOf(obj))
		return
	}
	body, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	isDry, err := dryRun(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if r.Method == http.MethodPatch && h.res.CustomResource && contentType(r) == mediaStrategicPatch {
		// A custom resource's Scale takes the patch types the resource
		// takes, as upstream.
		h.s.writeError(w, r, unsupportedMediaType(h.patchTypes()...))
		return
	}
	if r.Method == http.MethodPatch && contentType(r) == mediaApplyPatchYAML {
		opts, err := parseWriteOptions(r, "PatchOptions", mediaApplyPatchYAML)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		req := updateRequest{namespace: namespace, name: name, user: requestUser(r), dryRun: opts.dryRun,
			mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
				return h.applyScale(w, cur, name, body, opts)
			}}
		out, _, err := h.guaranteedUpdate(r.Context(), req)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		h.s.writeObject(w, r, t, http.StatusOK, nil, h.scaleOf(out))
		return
	}
	scaleRef := kindRef{kind: scaleGVK, newObject: func() runtime.Object { return &autoscalingv1.Scale{} }}
	req := updateRequest{namespace: namespace, name: name, user: requestUser(r), dryRun: isDry,
		track: true, manager: requestManager(r), managedSubresource: "scale",
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			var want *autoscalingv1.Scale
			if r.Method == http.MethodPatch {
				original, err := json.Marshal(h.scaleOf(cur))
				if err != nil {
					return nil, false, err
				}
				patched, err := applyPatch(contentType(r), original, body, &autoscalingv1.Scale{})
				if err != nil {
					return nil, false, err
				}
				jr := r.Clone(r.Context())
				jr.Header.Set("Content-Type", mediaJSON)
				obj, err := h.decodeBody(w, jr, patched, scaleRef)
				if err != nil {
					return nil, false, err
				}
				want = obj.(*autoscalingv1.Scale)
			} else {
				obj, err := h.decodeBody(w, r, body, scaleRef)
				if err != nil {
					return nil, false, err
				}
				want = obj.(*autoscalingv1.Scale)
				if want.Name != name {
					return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", want.Name, name))
				}
			}
			if want.Spec.Replicas < 0 {
				return nil, false, apierrors.NewInvalid(scaleGVK.GroupKind(), name, fieldErrs("spec.replicas", want.Spec.Replicas, "must be greater than or equal to 0"))
			}
			curRV := objectMeta(cur).GetResourceVersion()
			h.res.Scale.Set(cur, want.Spec.Replicas)
			pinned := want.ResourceVersion != "" && (r.Method != http.MethodPatch || want.ResourceVersion != curRV)
			if want.ResourceVersion != "" {
				objectMeta(cur).SetResourceVersion(want.ResourceVersion)
			} else {
				objectMeta(cur).SetResourceVersion("")
			}
			return cur, pinned, nil
		},
	}
	out, _, err := h.guaranteedUpdate(r.Context(), req)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.s.writeObject(w, r, t, http.StatusOK, nil, h.scaleOf(out))
}

// bindingResource names binding refusals as upstream does: "Operation
// cannot be fulfilled on pods/binding ...".
var bindingResource = schema.GroupResource{Resource: "pods/binding"}

// bind serves POST pods/{name}/binding: the scheduler's way to assign a
// pod to a node, allowed once.
func (h *resourceHandler) bind(w http.ResponseWriter, r *http.Request, namespace, name string) {
	ref := kindRef{kind: corev1.SchemeGroupVersion.WithKind("Binding"), newObject: func() runtime.Object { return &corev1.Binding{} }}
	obj, isDry, err := h.readObject(w, r, ref)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	b := obj.(*corev1.Binding)
	if b.Name == "" {
		b.Name = name
	}
	if b.Name != name {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", b.Name, name)))
		return
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		h.s.writeError(w, r, apierrors.NewInvalid(ref.kind.GroupKind(), name, fieldErrs("target.kind", b.Target.Kind, "must be empty or 'Node'")))
		return
	}
	if b.Target.Name == "" {
		h.s.writeError(w, r, apierrors.NewInvalid(ref.kind.GroupKind(), name, fieldErrs("target.name", "", "must not be empty")))
		return
	}
	// Admission sees the Binding, as a create of pods/binding: webhooks and
	// policies matching pods/binding get it, and PodTopologyLabels adds
	// the node's topology labels to it.
	b.Namespace = namespace
	attrs := &admit.Attributes{Operation: admit.Create, Kind: ref.kind, Resource: h.res.GroupVersionResource(),
		Subresource: "binding", Namespace: namespace, Name: name, Object: b, User: requestUser(r), DryRun: isDry}
	if err := h.s.admission.Admit(r.Context(), attrs); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if err := h.s.admission.Validate(r.Context(), attrs); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	req := updateRequest{namespace: namespace, name: name, user: requestUser(r), dryRun: isDry, admitted: true,
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			pod := cur.(*corev1.Pod)
			if b.UID != "" && b.UID != pod.UID {
				return nil, false, apierrors.NewConflict(h.gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, pod.UID))
			}
			if pod.DeletionTimestamp != nil {
				return nil, false, apierrors.NewConflict(bindingResource, name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", name))
			}
			if pod.Spec.NodeName != "" {
				return nil, false, apierrors.NewConflict(bindingResource, name, fmt.Errorf("pod %v is already assigned to node %q", name, pod.Spec.NodeName))
			}
			pod.Spec.NodeName = b.Target.Name
			for k, v := range b.Annotations {
				if pod.Annotations == nil {
					pod.Annotations = map[string]string{}
				}
				pod.Annotations[k] = v
			}
			// The Binding's labels (PodTopologyLabels' among them) land on
			// the pod, overwriting, as upstream's binding does.
			for k, v := range b.Labels {
				if pod.Labels == nil {
					pod.Labels = map[string]string{}
				}
				pod.Labels[k] = v
			}
			setPodScheduled(pod, h.s.now())
			pod.ResourceVersion = ""
			return pod, false, nil
		},
	}
	// The binding writes spec and status at once, so it bypasses the
	// spec/status split of the main resource.
	if _, _, err := h.guaranteedUpdate(r.Context(), withSubresource(req, "binding")); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	st := &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated}
	st.Kind, st.APIVersion = "Status", "v1"
	h.s.writeObject(w, r, target{media: negotiatedMedia(r)}, http.StatusCreated, nil, st)
}

func withSubresource(req updateRequest, sub string) updateRequest {
	req.subresource = sub
	return req
}

// finalize serves PUT namespaces/{name}/finalize: only spec.finalizers
// change; a terminating namespace whose finalizers are gone is deleted.
func (h *resourceHandler) finalize(w http.ResponseWriter, r *http.Request, name string) {
	obj, isDry, err := h.readObject(w, r, h.kindRef())
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	want := obj.(*corev1.Namespace)
	req := updateRequest{name: name, user: requestUser(r), dryRun: isDry, subresource: "finalize",
		track: true, manager: requestManager(r),
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			ns := cur.(*corev1.Namespace)
			ns.Spec.Finalizers = want.Spec.Finalizers
			ns.ResourceVersion = want.ResourceVersion
			return ns, want.ResourceVersion != "", nil
		},
	}
	out, _, err := h.guaranteedUpdate(r.Context(), req)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.s.writeObject(w, r, target{media: negotiatedMedia(r)}, http.StatusOK, h, out)
}

// approve serves PUT and PATCH on certificatesigningrequests/{name}/approval.
// The client sends the whole object (PUT) or a patch of it; the resource's
// Approval strategy keeps only the conditions from it and checks them, on
// every compare-and-swap attempt, against the stored object.
func (h *resourceHandler) approve(w http.ResponseWriter, r *http.Request, name string) {
	var (
		body      runtime.Object
		patchBody []byte
		isDry     bool
		err       error
	)
	if r.Method == http.MethodPatch {
		if patchBody, err = readBody(r); err == nil {
			isDry, err = dryRun(r)
		}
	} else if body, isDry, err = h.readObject(w, r, h.kindRef()); err == nil && objectMeta(body).GetName() != name {
		err = apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", objectMeta(body).GetName(), name))
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	patchType := contentType(r)
	strategy := h.res.Approval
	req := updateRequest{name: name, user: requestUser(r), dryRun: isDry, subresource: "approval",
		track: true, manager: requestManager(r),
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			var (
				next   runtime.Object
				pinned bool
			)
			if body != nil {
				next = body.DeepCopyObject()
				pinned = objectMeta(next).GetResourceVersion() != ""
			} else {
				var err error
				if next, pinned, err = h.patchObject(w, r, cur, patchType, patchBody); err != nil {
					return nil, false, err
				}
			}
			if strategy.PrepareForUpdate != nil {
				strategy.PrepareForUpdate(next, cur)
			}
			if strategy.ValidateUpdate != nil {
				if err := h.invalid(next, strategy.ValidateUpdate(next, cur)); err != nil {
					return nil, false, err
				}
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

func setPodScheduled(pod *corev1.Pod, now interface{ Unix() int64 }) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			pod.Status.Conditions[i].Status = corev1.ConditionTrue
			pod.Status.Conditions[i].Reason = ""
			pod.Status.Conditions[i].Message = ""
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Unix(now.Unix(), 0),
	})
}

func negotiatedMedia(r *http.Request) string {
	t, ok := negotiate(r, false)
	if !ok {
		return mediaJSON
	}
	return t.media
}
