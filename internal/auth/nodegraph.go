package auth

import (
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"
)

// NodeGraph is the NodeRelations index the Node authorizer reads: for
// each node, the objects the pods bound to it reference, with a count of
// the pods referencing each, so that an answer is one map lookup and a
// pod event costs O(objects that pod references).
//
// It keeps no pods, only what each bound pod references: the API
// server's watch cache already holds the pods, and a second copy would
// double the largest object set in memory. It is fed by three reflectors
// (client-go's, one per resource) through PodStore, ClaimStore and
// VolumeAttachmentStore, so it follows the API by events, never by a
// list per request. It is safe for concurrent use: one writer at a time,
// readers in parallel.
//
// What a node reaches, as upstream's graph:
//
//	node <- pod <- secret, configmap, serviceaccount, resourceclaim, pvc <- pv
//	node <- volumeattachment
//
// Upstream also follows pv <- secret (the secrets of a CSI or RBD volume)
// and node <- resourceslice; those are not indexed here yet.
type NodeGraph struct {
	mu sync.RWMutex
	// pods: every bound pod, namespace/name -> what it references.
	pods map[nsName]*podRefs
	// nodes: node -> object -> number of its pods referencing it.
	nodes map[string]map[objectRef]int
	// claimVolume and volumeClaims: a claim's bound volume, both ways.
	claimVolume  map[nsName]string
	volumeClaims map[string]map[nsName]struct{}
	// attachments: volume attachment name -> node.
	attachments map[string]string

	podsSynced, claimsSynced, attachmentsSynced atomic.Bool
}

type nsName struct{ namespace, name string }

type objectRef struct {
	kind            Relation
	namespace, name string
}

type podRefs struct {
	node string
	refs []objectRef
}

// NewNodeGraph returns an empty graph. Until each store has had its first
// Replace (the reflector's initial list) Synced is false.
func NewNodeGraph() *NodeGraph {
	return &NodeGraph{
		pods:         map[nsName]*podRefs{},
		nodes:        map[string]map[objectRef]int{},
		claimVolume:  map[nsName]string{},
		volumeClaims: map[string]map[nsName]struct{}{},
		attachments:  map[string]string{},
	}
}

// Synced reports whether pods, claims and volume attachments have all
// been listed once.
func (g *NodeGraph) Synced() bool {
	return g.podsSynced.Load() && g.claimsSynced.Load() && g.attachmentsSynced.Load()
}

// Related implements NodeRelations.
func (g *NodeGraph) Related(node string, kind Relation, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	switch kind {
	case RelVolumeAttachment:
		n, ok := g.attachments[name]
		return ok && n == node
	case RelPersistentVolume:
		refs := g.nodes[node]
		for claim := range g.volumeClaims[name] {
			if refs[objectRef{RelPersistentVolumeClaim, claim.namespace, claim.name}] > 0 {
				return true
			}
		}
		return false
	}
	return g.nodes[node][objectRef{kind, namespace, name}] > 0
}

// setPodLocked records what a pod references, replacing what it referenced
// before. A pod not bound to a node is not recorded: only a pod a
// kubelet is asked to run gives it access.
func (g *NodeGraph) setPodLocked(pod *corev1.Pod) {
	key := nsName{pod.Namespace, pod.Name}
	var next *podRefs
	if pod.Spec.NodeName != "" {
		next = &podRefs{node: pod.Spec.NodeName, refs: podReferences(pod)}
	}
	prev := g.pods[key]
	if prev != nil && next != nil && prev.node == next.node && equalRefs(prev.refs, next.refs) {
		return // a status update: nothing the graph holds changed
	}
	if prev != nil {
		g.unlinkLocked(key, prev)
	}
	if next != nil {
		g.pods[key] = next
		refs := g.nodes[next.node]
		if refs == nil {
			refs = map[objectRef]int{}
			g.nodes[next.node] = refs
		}
		for _, r := range next.refs {
			refs[r]++
		}
	}
}

func (g *NodeGraph) deletePod(namespace, name string) {
	key := nsName{namespace, name}
	g.mu.Lock()
	defer g.mu.Unlock()
	if prev := g.pods[key]; prev != nil {
		g.unlinkLocked(key, prev)
	}
}

func (g *NodeGraph) unlinkLocked(key nsName, p *podRefs) {
	delete(g.pods, key)
	refs := g.nodes[p.node]
	for _, r := range p.refs {
		if refs[r]--; refs[r] <= 0 {
			delete(refs, r)
		}
	}
	if len(refs) == 0 {
		delete(g.nodes, p.node)
	}
}

func equalRefs(a, b []objectRef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (g *NodeGraph) setClaimLocked(pvc *corev1.PersistentVolumeClaim) {
	key := nsName{pvc.Namespace, pvc.Name}
	if old, ok := g.claimVolume[key]; ok {
		if old == pvc.Spec.VolumeName {
			return
		}
		g.unbindClaimLocked(key, old)
	}
	if pvc.Spec.VolumeName == "" {
		return
	}
	g.claimVolume[key] = pvc.Spec.VolumeName
	claims := g.volumeClaims[pvc.Spec.VolumeName]
	if claims == nil {
		claims = map[nsName]struct{}{}
		g.volumeClaims[pvc.Spec.VolumeName] = claims
	}
	claims[key] = struct{}{}
}

func (g *NodeGraph) deleteClaim(namespace, name string) {
	key := nsName{namespace, name}
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.claimVolume[key]; ok {
		g.unbindClaimLocked(key, old)
	}
}

func (g *NodeGraph) unbindClaimLocked(key nsName, volume string) {
	delete(g.claimVolume, key)
	claims := g.volumeClaims[volume]
	delete(claims, key)
	if len(claims) == 0 {
		delete(g.volumeClaims, volume)
	}
}

// podReferences lists, without duplicates and in a stable order, the
// objects a pod references that its node may then read: the secrets and
// config maps of its volumes (projected sources included), env and
// envFrom of every container (init and ephemeral too) and its image pull
// secrets; its claims (an ephemeral volume's claim is <pod>-<volume>);
// its service account; its resource claims, named in the spec or, for
// claims made from templates, in the status. It is upstream's
// VisitPodSecretNames and VisitPodConfigmapNames plus the graph's claims.
func podReferences(pod *corev1.Pod) []objectRef {
	ns := pod.Namespace
	var out []objectRef
	// A pod references a handful of objects: a linear scan beats a map.
	add := func(kind Relation, name string) {
		if name == "" {
			return
		}
		if r := (objectRef{kind, ns, name}); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(RelSecret, s.Name)
	}
	visitContainers := func(env []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, e := range from {
			if e.SecretRef != nil {
				add(RelSecret, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(RelConfigMap, e.ConfigMapRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(RelSecret, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(RelConfigMap, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		visitContainers(pod.Spec.InitContainers[i].Env, pod.Spec.InitContainers[i].EnvFrom)
	}
	for i := range pod.Spec.Containers {
		visitContainers(pod.Spec.Containers[i].Env, pod.Spec.Containers[i].EnvFrom)
	}
	for i := range pod.Spec.EphemeralContainers {
		visitContainers(pod.Spec.EphemeralContainers[i].Env, pod.Spec.EphemeralContainers[i].EnvFrom)
	}
	for i := range pod.Spec.Volumes {
		visitVolume(&pod.Spec.Volumes[i], pod.Name, add)
	}
	add(RelServiceAccount, pod.Spec.ServiceAccountName)
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimName != nil {
			add(RelResourceClaim, *c.ResourceClaimName)
		}
	}
	for _, c := range pod.Status.ResourceClaimStatuses {
		if c.ResourceClaimName != nil {
			add(RelResourceClaim, *c.ResourceClaimName)
		}
	}
	return out
}

func visitVolume(v *corev1.Volume, podName string, add func(Relation, string)) {
	s := &v.VolumeSource
	secretRef := func(r *corev1.LocalObjectReference) {
		if r != nil {
			add(RelSecret, r.Name)
		}
	}
	switch {
	case s.Secret != nil:
		add(RelSecret, s.Secret.SecretName)
	case s.ConfigMap != nil:
		add(RelConfigMap, s.ConfigMap.Name)
	case s.PersistentVolumeClaim != nil:
		add(RelPersistentVolumeClaim, s.PersistentVolumeClaim.ClaimName)
	case s.Ephemeral != nil:
		add(RelPersistentVolumeClaim, podName+"-"+v.Name)
	case s.Projected != nil:
		for _, src := range s.Projected.Sources {
			if src.Secret != nil {
				add(RelSecret, src.Secret.Name)
			}
			if src.ConfigMap != nil {
				add(RelConfigMap, src.ConfigMap.Name)
			}
		}
	case s.AzureFile != nil:
		add(RelSecret, s.AzureFile.SecretName)
	case s.CephFS != nil:
		secretRef(s.CephFS.SecretRef)
	case s.Cinder != nil:
		secretRef(s.Cinder.SecretRef)
	case s.FlexVolume != nil:
		secretRef(s.FlexVolume.SecretRef)
	case s.ISCSI != nil:
		secretRef(s.ISCSI.SecretRef)
	case s.RBD != nil:
		secretRef(s.RBD.SecretRef)
	case s.ScaleIO != nil:
		secretRef(s.ScaleIO.SecretRef)
	case s.StorageOS != nil:
		secretRef(s.StorageOS.SecretRef)
	case s.CSI != nil:
		secretRef(s.CSI.NodePublishSecretRef)
	}
}

// PodStore is the cache.ReflectorStore a pod reflector fills the graph
// through. Objects other than pods are ignored.
func (g *NodeGraph) PodStore() cache.ReflectorStore {
	return &graphStore{g: g, synced: &g.podsSynced,
		set: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				g.setPodLocked(p)
			}
		},
		remove: g.deletePod,
		clear: func() {
			g.pods = map[nsName]*podRefs{}
			g.nodes = map[string]map[objectRef]int{}
		},
	}
}

// ClaimStore is the cache.ReflectorStore of persistent volume claims,
// which tie a claim a pod uses to the volume bound to it.
func (g *NodeGraph) ClaimStore() cache.ReflectorStore {
	return &graphStore{g: g, synced: &g.claimsSynced,
		set: func(obj any) {
			if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
				g.setClaimLocked(c)
			}
		},
		remove: g.deleteClaim,
		clear: func() {
			g.claimVolume = map[nsName]string{}
			g.volumeClaims = map[string]map[nsName]struct{}{}
		},
	}
}

// VolumeAttachmentStore is the cache.ReflectorStore of volume
// attachments, which name the node they attach to.
func (g *NodeGraph) VolumeAttachmentStore() cache.ReflectorStore {
	return &graphStore{g: g, synced: &g.attachmentsSynced,
		set: func(obj any) {
			if va, ok := obj.(*storagev1.VolumeAttachment); ok {
				g.attachments[va.Name] = va.Spec.NodeName
			}
		},
		remove: func(_, name string) {
			g.mu.Lock()
			defer g.mu.Unlock()
			delete(g.attachments, name)
		},
		clear: func() { g.attachments = map[string]string{} },
	}
}

// graphStore adapts the graph's setters to what a reflector calls. set
// and clear run with the graph's lock held; remove takes it. Replace is a
// full relist (start-up, or after the watch fell too far behind): the
// graph's part is rebuilt from the list under one lock, so readers see
// the old index or the new one, never a half-filled one.
type graphStore struct {
	g      *NodeGraph
	synced *atomic.Bool
	set    func(obj any)
	remove func(namespace, name string)
	clear  func()
}

func (s *graphStore) Add(obj any) error { return s.Update(obj) }
func (s *graphStore) Resync() error     { return nil }

func (s *graphStore) Update(obj any) error {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.set(obj)
	return nil
}

func (s *graphStore) Delete(obj any) error {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if m, ok := obj.(interface {
		GetNamespace() string
		GetName() string
	}); ok {
		s.remove(m.GetNamespace(), m.GetName())
	}
	return nil
}

func (s *graphStore) Replace(list []any, _ string) error {
	s.g.mu.Lock()
	s.clear()
	for _, obj := range list {
		s.set(obj)
	}
	s.g.mu.Unlock()
	s.synced.Store(true)
	return nil
}
