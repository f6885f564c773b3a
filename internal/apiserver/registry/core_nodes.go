package registry

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The node strategy. Nodes are written mostly by their kubelet, which
// creates them with status filled in, so create keeps the status. Once set,
// podCIDRs and providerID are fixed.

func defaultNode(obj runtime.Object) {
	node := obj.(*corev1.Node)
	// The API carries podCIDR and podCIDRs; keep the singular one the first
	// of the list, whichever a client wrote.
	if len(node.Spec.PodCIDRs) == 0 && node.Spec.PodCIDR != "" {
		node.Spec.PodCIDRs = []string{node.Spec.PodCIDR}
	} else if len(node.Spec.PodCIDRs) > 0 {
		node.Spec.PodCIDR = node.Spec.PodCIDRs[0]
	}
	defaultResourceList(node.Status.Capacity)
	defaultResourceList(node.Status.Allocatable)
	if node.Status.Allocatable == nil && node.Status.Capacity != nil {
		node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	}
}

func validateNode(obj runtime.Object) field.ErrorList {
	node := obj.(*corev1.Node)
	allErrs := validateCoreMeta(&node.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	// Upstream reports create-time taint errors under metadata, and clients
	// have come to match on it.
	allErrs = append(allErrs, validateNodeTaints(node.Spec.Taints, field.NewPath("metadata", "taints"))...)
	allErrs = append(allErrs, validateNodeResources(node)...)
	cidrsPath := field.NewPath("spec", "podCIDRs")
	for i, c := range node.Spec.PodCIDRs {
		allErrs = append(allErrs, validation.IsValidCIDR(cidrsPath.Index(i), c)...)
	}
	if len(node.Spec.PodCIDRs) > 1 {
		v4, v6 := 0, 0
		seen := sets.New[string]()
		for i, c := range node.Spec.PodCIDRs {
			if strings.Contains(c, ":") {
				v6++
			} else {
				v4++
			}
			if seen.Has(c) {
				allErrs = append(allErrs, field.Duplicate(cidrsPath.Index(i), c))
			}
			seen.Insert(c)
		}
		if v4 > 1 || v6 > 1 || len(node.Spec.PodCIDRs) > 2 {
			allErrs = append(allErrs, field.Invalid(cidrsPath, node.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
		}
	}
	return allErrs
}

func validateNodeTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	unique := map[corev1.TaintEffect]sets.Set[string]{}
	for i, t := range taints {
		p := fldPath.Index(i)
		allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("value"), t.Value, strings.Join(errs, ";")))
		}
		allErrs = append(allErrs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		if unique[t.Effect].Has(t.Key) {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			allErrs = append(allErrs, dup)
			continue
		}
		if unique[t.Effect] == nil {
			unique[t.Effect] = sets.New[string]()
		}
		unique[t.Effect].Insert(t.Key)
	}
	return allErrs
}

func validateNodeResources(node *corev1.Node) field.ErrorList {
	var allErrs field.ErrorList
	for _, l := range []struct {
		path string
		list corev1.ResourceList
	}{{"capacity", node.Status.Capacity}, {"allocatable", node.Status.Allocatable}} {
		for _, name := range sortedResourceNames(l.list) {
			p := field.NewPath("status", l.path).Key(string(name))
			for _, msg := range validation.IsQualifiedName(string(name)) {
				allErrs = append(allErrs, field.Invalid(p, name, msg))
			}
			if q := l.list[name]; q.Value() < 0 {
				allErrs = append(allErrs, field.Invalid(p, q.Value(), "must be a valid resource quantity"))
			}
		}
	}
	return allErrs
}

func validateNodeUpdate(obj, old runtime.Object) field.ErrorList {
	node, oldNode := obj.(*corev1.Node), old.(*corev1.Node)
	allErrs := validateCoreMetaUpdate(&node.ObjectMeta, &oldNode.ObjectMeta)
	allErrs = append(allErrs, validateNodeResources(node)...)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range node.Status.Addresses {
		if seen[a] {
			allErrs = append(allErrs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		seen[a] = true
	}
	if len(oldNode.Spec.PodCIDRs) > 0 && !sameStrings(oldNode.Spec.PodCIDRs, node.Spec.PodCIDRs) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if oldNode.Spec.ProviderID != "" && oldNode.Spec.ProviderID != node.Spec.ProviderID {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	allErrs = append(allErrs, validateNodeTaints(node.Spec.Taints, field.NewPath("spec", "taints"))...)
	if node.Spec.DoNotUseExternalID != oldNode.Spec.DoNotUseExternalID {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return allErrs
}

func nodeFields(obj runtime.Object) fields.Set {
	node := obj.(*corev1.Node)
	return fields.Set{"spec.unschedulable": strconv.FormatBool(node.Spec.Unschedulable)}
}

const (
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	labelNodeRole       = "kubernetes.io/role"
)

var nodeTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Status", "string", "The status of the node", 0),
		column("Roles", "string", "The roles of the node", 0),
		ageColumn,
		column("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"], 0),
		column("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"], 1),
		column("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"], 1),
		column("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"], 1),
		column("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"], 1),
		column("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"], 1),
	},
	Row: nodeRow,
}

func nodeRow(obj runtime.Object) []interface{} {
	node := obj.(*corev1.Node)
	var status []string
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		// The last Ready condition wins, as in kubectl.
		status = []string{"NotReady"}
		if c.Status == corev1.ConditionTrue {
			status = []string{"Ready"}
		}
	}
	if len(status) == 0 {
		status = []string{"Unknown"}
	}
	if node.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	info := node.Status.NodeInfo
	unknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	return []interface{}{
		node.Name, strings.Join(status, ","), orNone(strings.Join(nodeRoles(node), ",")),
		Age(node.CreationTimestamp), info.KubeletVersion,
		nodeAddress(node, corev1.NodeInternalIP), nodeAddress(node, corev1.NodeExternalIP),
		unknown(info.OSImage), unknown(info.KernelVersion), unknown(info.ContainerRuntimeVersion),
	}
}

// nodeRoles reads roles from node-role.kubernetes.io/<role> label keys and
// the older kubernetes.io/role=<role> label.
func nodeRoles(node *corev1.Node) []string {
	roles := sets.New[string]()
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); role != "" {
				roles.Insert(role)
			}
		case k == labelNodeRole && v != "":
			roles.Insert(v)
		}
	}
	list := sets.List(roles)
	sort.Strings(list)
	return list
}

func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}
