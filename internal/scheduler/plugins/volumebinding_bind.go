package plugins

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// The binding half of VolumeBinding: assumptions in Reserve, API writes
// and the wait for the PV controller in PreBind.

// Reserve assumes the chosen node's bindings in memory.
func (pl *VolumeBinding) Reserve(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, nodeName string) *framework.Status {
	s, err := vbReadState(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	vols, ok := s.byNode[nodeName]
	if !ok || len(vols.static)+len(vols.provision) == 0 {
		s.allBound = true
		return nil
	}
	for i := range vols.static {
		b := &vols.static[i]
		b.pv = vbBindVolumeToClaim(b.pv, b.pvc)
		pl.pvs.assume(b.pv.Name, b.pv)
	}
	for i, pvc := range vols.provision {
		c := pvc.DeepCopy()
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, vbAnnSelectedNode, nodeName)
		vols.provision[i] = c
		pl.pvcs.assume(c.Namespace+"/"+c.Name, c)
	}
	s.allBound = false
	return nil
}

// Unreserve forgets the assumptions; idempotent.
func (pl *VolumeBinding) Unreserve(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, nodeName string) {
	s, err := vbReadState(cs)
	if err != nil {
		return
	}
	if vols, ok := s.byNode[nodeName]; ok {
		pl.vbRevert(vols.static, vols.provision)
	}
}

func (pl *VolumeBinding) vbRevert(static []vbBinding, provision []*corev1.PersistentVolumeClaim) {
	for _, b := range static {
		pl.pvs.restore(b.pv.Name)
	}
	for _, c := range provision {
		pl.pvcs.restore(c.Namespace + "/" + c.Name)
	}
}

// vbBindVolumeToClaim returns a copy of pv with claimRef pointing at pvc.
func vbBindVolumeToClaim(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	c := pv.DeepCopy()
	if !vbPVBoundToClaim(pv, pvc) {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, vbAnnBoundByController, "yes")
	}
	c.Spec.ClaimRef = &corev1.ObjectReference{
		Kind: "PersistentVolumeClaim", APIVersion: "v1",
		Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion,
	}
	return c
}

// PreBind writes the bindings and waits until the claims are bound.
func (pl *VolumeBinding) PreBind(ctx context.Context, cs *framework.CycleState, pod *corev1.Pod, nodeName string) *framework.Status {
	s, err := vbReadState(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	if s.allBound {
		return nil
	}
	vols, ok := s.byNode[nodeName]
	if !ok {
		return framework.AsStatus(fmt.Errorf("no pod volumes found for node %q", nodeName))
	}
	if err := pl.vbWrite(ctx, vols); err != nil {
		return framework.AsStatus(err)
	}
	if err := pl.vbWait(ctx, vols); err != nil {
		return framework.AsStatus(fmt.Errorf("binding volumes: %w", err))
	}
	return nil
}

// vbWrite makes the API updates; on failure the assumptions not yet
// written are reverted (written ones leave the cache once the informer
// sees them).
func (pl *VolumeBinding) vbWrite(ctx context.Context, vols *vbPodVolumes) (err error) {
	doneStatic, doneProvision := 0, 0
	defer func() {
		if err != nil {
			pl.vbRevert(vols.static[doneStatic:], vols.provision[doneProvision:])
		}
	}()
	for i := range vols.static {
		b := &vols.static[i]
		pv, err := pl.client.CoreV1().PersistentVolumes().Update(ctx, b.pv, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		b.pv = pv
		pvc, err := pl.vbUpdateClaim(ctx, b.pvc, func(c *corev1.PersistentVolumeClaim) error {
			if c.Spec.VolumeName != "" && c.Spec.VolumeName != pv.Name {
				return fmt.Errorf("persistentvolumeclaim %q is bound to persistentvolume %q", c.Name, c.Spec.VolumeName)
			}
			c.Spec.VolumeName = pv.Name
			return nil
		})
		if err != nil {
			return err
		}
		b.pvc = pvc
		doneStatic++
	}
	for i, want := range vols.provision {
		node := want.Annotations[vbAnnSelectedNode]
		pvc, err := pl.vbUpdateClaim(ctx, want, func(c *corev1.PersistentVolumeClaim) error {
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, vbAnnSelectedNode, node)
			return nil
		})
		if err != nil {
			return err
		}
		vols.provision[i] = pvc
		doneProvision++
	}
	return nil
}

// vbUpdateClaim applies edit to the claim and updates it, re-reading it
// from the API on conflict.
func (pl *VolumeBinding) vbUpdateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim, edit func(*corev1.PersistentVolumeClaim) error) (*corev1.PersistentVolumeClaim, error) {
	var out *corev1.PersistentVolumeClaim
	cur := pvc.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := edit(cur); err != nil {
			return err
		}
		updated, err := pl.client.CoreV1().PersistentVolumeClaims(cur.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			fresh, gerr := pl.client.CoreV1().PersistentVolumeClaims(cur.Namespace).Get(ctx, cur.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			cur = fresh
			return err
		}
		out = updated
		return err
	})
	return out, err
}

// vbWait waits, up to the bind timeout, for the PV controller to bind
// every claim. PV/PVC events wake it; it also rechecks now and then.
func (pl *VolumeBinding) vbWait(ctx context.Context, vols *vbPodVolumes) error {
	deadline := time.Now().Add(pl.bindTimeout)
	for {
		wake := pl.changed.wait()
		done, err := pl.vbCheckBound(vols)
		if err != nil || done {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return context.DeadlineExceeded
		}
		t := time.NewTimer(min(left, pl.recheck))
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// vbCheckBound reads the informers' view (shared with the PV controller,
// unlike the assumptions): true once all claims are bound, an error when
// binding went wrong and scheduling must be retried.
func (pl *VolumeBinding) vbCheckBound(vols *vbPodVolumes) (bool, error) {
	for _, b := range vols.static {
		pv, err := pl.pvLister.Get(b.pv.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check binding: %w", err)
		}
		if vbOlder(pv, b.pv) {
			return false, nil
		}
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
			return false, fmt.Errorf("ClaimRef got reset for pv %q", pv.Name)
		}
		if !vbNodeAffinityOK(pv, vols.node) {
			return false, fmt.Errorf("pv %q node affinity doesn't match node %q", pv.Name, vols.node.Name)
		}
		pvc, err := pl.pvcLister.PersistentVolumeClaims(b.pvc.Namespace).Get(b.pvc.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check binding: %w", err)
		}
		if vbOlder(pvc, b.pvc) || !vbClaimFullyBound(pvc) {
			return false, nil
		}
	}
	for _, want := range vols.provision {
		pvc, err := pl.pvcLister.PersistentVolumeClaims(want.Namespace).Get(want.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check provisioning pvc: %w", err)
		}
		if vbOlder(pvc, want) {
			return false, nil
		}
		if pvc.Annotations[vbAnnSelectedNode] != vols.node.Name {
			// Provisioners drop the annotation when they fail, to hand
			// the claim back to the scheduler.
			return false, fmt.Errorf("provisioning failed for PVC %q", pvc.Name)
		}
		if pvc.Spec.VolumeName != "" {
			pv, err := pl.pvLister.Get(pvc.Spec.VolumeName)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, fmt.Errorf("failed to get pv %q: %w", pvc.Spec.VolumeName, err)
			}
			if !vbNodeAffinityOK(pv, vols.node) {
				return false, fmt.Errorf("pv %q node affinity doesn't match node %q", pv.Name, vols.node.Name)
			}
		}
		if !vbClaimFullyBound(pvc) {
			return false, nil
		}
	}
	return true, nil
}

// vbOlder reports whether the informer's object is older than the one we
// wrote (resource versions are etcd revisions).
func vbOlder(seen, written metav1.Object) bool {
	a, err1 := strconv.ParseUint(seen.GetResourceVersion(), 10, 64)
	b, err2 := strconv.ParseUint(written.GetResourceVersion(), 10, 64)
	return err1 == nil && err2 == nil && a < b
}

// ---- assumptions ----

// vbAssumeCache overlays objects the scheduler has decided on but not yet
// seen back from the API. An assumption ends when the informer's object
// moves past the version it was derived from, or on restore.
type vbAssumeCache[T metav1.Object] struct {
	mu      sync.Mutex
	assumed map[string]vbAssumed[T]
}

type vbAssumed[T metav1.Object] struct {
	obj    T
	baseRV string
}

func newVBAssumeCache[T metav1.Object]() *vbAssumeCache[T] {
	return &vbAssumeCache[T]{assumed: map[string]vbAssumed[T]{}}
}

// assume records obj, derived from the informer version obj still carries.
func (c *vbAssumeCache[T]) assume(key string, obj T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assumed[key] = vbAssumed[T]{obj: obj, baseRV: obj.GetResourceVersion()}
}

func (c *vbAssumeCache[T]) restore(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.assumed, key)
}

// resolve returns the assumed object for the informer's current one.
func (c *vbAssumeCache[T]) resolve(key string, seen T) T {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.assumed[key]
	if !ok {
		return seen
	}
	if seen.GetResourceVersion() != a.baseRV {
		delete(c.assumed, key)
		return seen
	}
	return a.obj
}

// vbSignal is a broadcast: wait returns a channel closed by the next
// notify.
type vbSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *vbSignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *vbSignal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
