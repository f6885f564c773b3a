package registry

import (
	"fmt"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rbacName is the name rule of roles and bindings: any string usable as a
// URL path segment. It is looser than the DNS rules of other kinds because
// role names such as "system:controller:job-controller" carry colons.
func rbacName(name string, _ bool) []string {
	return path.IsValidPathSegmentName(name)
}

func defaultRoleBinding(obj runtime.Object) {
	b := obj.(*rbacv1.RoleBinding)
	defaultRoleRef(&b.RoleRef)
	defaultSubjects(b.Subjects)
}

func defaultClusterRoleBinding(obj runtime.Object) {
	b := obj.(*rbacv1.ClusterRoleBinding)
	defaultRoleRef(&b.RoleRef)
	defaultSubjects(b.Subjects)
}

func defaultRoleRef(r *rbacv1.RoleRef) {
	if r.APIGroup == "" {
		r.APIGroup = rbacv1.GroupName
	}
}

// defaultSubjects fills apiGroup: users and groups belong to the RBAC
// group, service accounts to the core group.
func defaultSubjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup != "" {
			continue
		}
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			s.APIGroup = rbacv1.GroupName
		}
	}
}

func validateRole(obj runtime.Object) field.ErrorList {
	r := obj.(*rbacv1.Role)
	allErrs := ValidateMeta(&r.ObjectMeta, true, rbacName)
	return append(allErrs, validatePolicyRules(r.Rules, true)...)
}

func validateRoleUpdate(obj, old runtime.Object) field.ErrorList {
	allErrs := validateRole(obj)
	return append(allErrs, ValidateMetaUpdate(&obj.(*rbacv1.Role).ObjectMeta, &old.(*rbacv1.Role).ObjectMeta)...)
}

func validateClusterRole(obj runtime.Object) field.ErrorList {
	r := obj.(*rbacv1.ClusterRole)
	allErrs := ValidateMeta(&r.ObjectMeta, false, rbacName)
	allErrs = append(allErrs, validatePolicyRules(r.Rules, false)...)
	if r.AggregationRule != nil {
		p := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			allErrs = append(allErrs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			sel := &r.AggregationRule.ClusterRoleSelectors[i]
			allErrs = append(allErrs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
			if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
				allErrs = append(allErrs, field.Invalid(p.Index(i), sel, "invalid label selector."))
			}
		}
	}
	return allErrs
}

func validateClusterRoleUpdate(obj, old runtime.Object) field.ErrorList {
	allErrs := validateClusterRole(obj)
	return append(allErrs, ValidateMetaUpdate(&obj.(*rbacv1.ClusterRole).ObjectMeta, &old.(*rbacv1.ClusterRole).ObjectMeta)...)
}

func validatePolicyRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var allErrs field.ErrorList
	for i, rule := range rules {
		p := field.NewPath("rules").Index(i)
		if len(rule.Verbs) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(rule.NonResourceURLs) > 0 {
			// Non-resource URLs (/healthz, /metrics) exist outside any
			// namespace, so only cluster roles may grant them.
			if namespaced {
				allErrs = append(allErrs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(rule.APIGroups) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(rule.Resources) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return allErrs
}

func validateRoleBinding(obj runtime.Object) field.ErrorList {
	b := obj.(*rbacv1.RoleBinding)
	allErrs := ValidateMeta(&b.ObjectMeta, true, rbacName)
	return append(allErrs, validateBinding(b.RoleRef, b.Subjects, true)...)
}

func validateRoleBindingUpdate(obj, old runtime.Object) field.ErrorList {
	b, o := obj.(*rbacv1.RoleBinding), old.(*rbacv1.RoleBinding)
	allErrs := validateRoleBinding(obj)
	allErrs = append(allErrs, ValidateMetaUpdate(&b.ObjectMeta, &o.ObjectMeta)...)
	return append(allErrs, validateRoleRefUnchanged(b.RoleRef, o.RoleRef)...)
}

func validateClusterRoleBinding(obj runtime.Object) field.ErrorList {
	b := obj.(*rbacv1.ClusterRoleBinding)
	allErrs := ValidateMeta(&b.ObjectMeta, false, rbacName)
	return append(allErrs, validateBinding(b.RoleRef, b.Subjects, false)...)
}

func validateClusterRoleBindingUpdate(obj, old runtime.Object) field.ErrorList {
	b, o := obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding)
	allErrs := validateClusterRoleBinding(obj)
	allErrs = append(allErrs, ValidateMetaUpdate(&b.ObjectMeta, &o.ObjectMeta)...)
	return append(allErrs, validateRoleRefUnchanged(b.RoleRef, o.RoleRef)...)
}

// validateRoleRefUnchanged: a binding grants one role for its lifetime.
// Re-pointing it would need the escalation check a create gets, so the
// binding must be deleted and recreated instead.
func validateRoleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref == old {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
}

func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var allErrs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		allErrs = append(allErrs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if !slices.Contains(kinds, ref.Kind) {
		allErrs = append(allErrs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range rbacName(ref.Name, false) {
			allErrs = append(allErrs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		allErrs = append(allErrs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Name == "" {
		allErrs = append(allErrs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.ValidateServiceAccountName(s.Name, false) {
				allErrs = append(allErrs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			allErrs = append(allErrs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		// A cluster binding has no namespace to fall back on.
		if !namespaced && s.Namespace == "" {
			allErrs = append(allErrs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			allErrs = append(allErrs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return allErrs
}

// Roles and cluster roles have no printer upstream, so kubectl shows the
// server's generic table: the name and an RFC 3339 creation time.
var roleTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Row: func(obj runtime.Object) []interface{} {
		var m *metav1.ObjectMeta
		switch r := obj.(type) {
		case *rbacv1.Role:
			m = &r.ObjectMeta
		case *rbacv1.ClusterRole:
			m = &r.ObjectMeta
		}
		return []interface{}{m.Name, m.CreationTimestamp.UTC().Format(time.RFC3339)}
	},
}

func bindingTable(kind string) *Table {
	return &Table{
		Columns: []metav1.TableColumnDefinition{
			nameColumn,
			{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
			ageColumn,
			{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + kind},
			{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + kind},
			{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + kind},
		},
		Row: func(obj runtime.Object) []interface{} {
			var m *metav1.ObjectMeta
			var ref rbacv1.RoleRef
			var subjects []rbacv1.Subject
			switch b := obj.(type) {
			case *rbacv1.RoleBinding:
				m, ref, subjects = &b.ObjectMeta, b.RoleRef, b.Subjects
			case *rbacv1.ClusterRoleBinding:
				m, ref, subjects = &b.ObjectMeta, b.RoleRef, b.Subjects
			}
			var users, groups, sas []string
			for _, s := range subjects {
				switch s.Kind {
				case rbacv1.ServiceAccountKind:
					sas = append(sas, s.Namespace+"/"+s.Name)
				case rbacv1.UserKind:
					users = append(users, s.Name)
				case rbacv1.GroupKind:
					groups = append(groups, s.Name)
				}
			}
			return []interface{}{
				m.Name, fmt.Sprintf("%s/%s", ref.Kind, ref.Name), Age(m.CreationTimestamp),
				strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", "),
			}
		},
	}
}

var (
	roleBindingTable        = bindingTable("roleBinding")
	clusterRoleBindingTable = bindingTable("clusterRoleBinding")
)
