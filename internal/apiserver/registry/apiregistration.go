package registry

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// apiregistration.k8s.io/v1: APIServices, one per group version the
// cluster serves, named "<version>.<group>" ("v1." for the core group).
// Upstream's aggregator keeps one for every built-in group version (a
// "local" APIService, no spec.service) and lets an extension API server
// claim a group version by naming the Service in front of it; clients
// such as the conformance suite's discovery checks read them.
//
// rudder serves the objects, validated and defaulted as upstream does,
// and creates the local ones at start (LocalAPIServices). It does not
// proxy to extension API servers yet: an APIService naming a Service is
// stored with Available=False, reason ProxyNotImplemented, so nobody
// mistakes it for a working aggregation.

const (
	apiServiceAvailableLocalReason = "Local"
	apiServiceUnsupportedReason    = "ProxyNotImplemented"
)

func apiregistrationResources() []*Resource {
	return []*Resource{
		{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices", Kind: "APIService", Singular: "apiservice",
			Categories: []string{"api-extensions"},
			New:        func() runtime.Object { return &apiregistrationv1.APIService{} },
			HasStatus:  true,
			Default:    defaultAPIService, PrepareForCreate: setAPIServiceAvailability,
			PrepareForUpdate: func(obj, _ runtime.Object) { setAPIServiceAvailability(obj) },
			Validate:         validateAPIService,
			Table:            apiServiceTable},
	}
}

func defaultAPIService(obj runtime.Object) {
	as := obj.(*apiregistrationv1.APIService)
	if as.Spec.Service != nil && as.Spec.Service.Port == nil {
		as.Spec.Service.Port = new(int32(443))
	}
}

// setAPIServiceAvailability sets the Available condition upstream's
// availability controller would: always True for a local APIService;
// False for one that names a Service, since nothing proxies to it here.
func setAPIServiceAvailability(obj runtime.Object) {
	as := obj.(*apiregistrationv1.APIService)
	cond := apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue,
		Reason: apiServiceAvailableLocalReason, Message: "Local APIServices are always available"}
	if as.Spec.Service != nil {
		cond = apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse,
			Reason:  apiServiceUnsupportedReason,
			Message: "this API server does not proxy to extension API servers"}
	}
	for i, c := range as.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			if c.Status == cond.Status && c.Reason == cond.Reason {
				return
			}
			cond.LastTransitionTime = metav1.Now()
			as.Status.Conditions[i] = cond
			return
		}
	}
	cond.LastTransitionTime = metav1.Now()
	as.Status.Conditions = append(as.Status.Conditions, cond)
}

// validateAPIService follows upstream's ValidateAPIService.
func validateAPIService(obj runtime.Object) field.ErrorList {
	as := obj.(*apiregistrationv1.APIService)
	// The name is "<version>.<group>" ("v1." for the core group, which is
	// no DNS subdomain), checked against the spec below; here only that it
	// fits in a URL path.
	allErrs := ValidateMeta(&as.ObjectMeta, false, path.ValidatePathSegmentName)
	spec := field.NewPath("spec")
	if want := as.Spec.Version + "." + as.Spec.Group; as.Name != want {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), as.Name, "must be `spec.version+\".\"+spec.group`: "+want))
	}
	if len(as.Spec.Group) == 0 && as.Spec.Version != "v1" {
		allErrs = append(allErrs, field.Required(spec.Child("group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if len(as.Spec.Group) > 0 {
		for _, msg := range validation.IsDNS1123Subdomain(as.Spec.Group) {
			allErrs = append(allErrs, field.Invalid(spec.Child("group"), as.Spec.Group, msg))
		}
	}
	for _, msg := range validation.IsDNS1035Label(as.Spec.Version) {
		allErrs = append(allErrs, field.Invalid(spec.Child("version"), as.Spec.Version, msg))
	}
	if as.Spec.GroupPriorityMinimum <= 0 || as.Spec.GroupPriorityMinimum > 20000 {
		allErrs = append(allErrs, field.Invalid(spec.Child("groupPriorityMinimum"), as.Spec.GroupPriorityMinimum, "must be positive and less than 20000"))
	}
	if as.Spec.VersionPriority <= 0 || as.Spec.VersionPriority > 1000 {
		allErrs = append(allErrs, field.Invalid(spec.Child("versionPriority"), as.Spec.VersionPriority, "must be positive and less than 1000"))
	}
	if as.Spec.Service == nil {
		if len(as.Spec.CABundle) != 0 {
			allErrs = append(allErrs, field.Invalid(spec.Child("caBundle"), fmt.Sprintf("%d bytes", len(as.Spec.CABundle)), "local APIServices may not have a caBundle"))
		}
		if as.Spec.InsecureSkipTLSVerify {
			allErrs = append(allErrs, field.Invalid(spec.Child("insecureSkipTLSVerify"), true, "local APIServices may not have insecureSkipTLSVerify"))
		}
		return allErrs
	}
	svc := spec.Child("service")
	if len(as.Spec.Service.Namespace) == 0 {
		allErrs = append(allErrs, field.Required(svc.Child("namespace"), ""))
	}
	if len(as.Spec.Service.Name) == 0 {
		allErrs = append(allErrs, field.Required(svc.Child("name"), ""))
	}
	if p := as.Spec.Service.Port; p != nil {
		for _, msg := range validation.IsValidPortNum(int(*p)) {
			allErrs = append(allErrs, field.Invalid(svc.Child("port"), *p, msg))
		}
	}
	if as.Spec.InsecureSkipTLSVerify && len(as.Spec.CABundle) > 0 {
		allErrs = append(allErrs, field.Invalid(spec.Child("insecureSkipTLSVerify"), as.Spec.InsecureSkipTLSVerify, "may not be true if caBundle is present"))
	}
	return allErrs
}

var apiServiceTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
		{Name: "Available", Type: "string", Description: "Whether this service is available."},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		as := obj.(*apiregistrationv1.APIService)
		service := "Local"
		if as.Spec.Service != nil {
			service = as.Spec.Service.Namespace + "/" + as.Spec.Service.Name
		}
		available := "Unknown"
		for _, c := range as.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				available = string(c.Status)
				if c.Status != apiregistrationv1.ConditionTrue {
					available += " (" + c.Reason + ")"
				}
			}
		}
		return []interface{}{as.Name, service, available, Age(as.CreationTimestamp)}
	},
}

// LocalAPIServices returns the local APIService of every group version
// the resources serve (one per group version, custom resources aside), as
// upstream's aggregator registers them, with its priorities: the group's
// from groupPriorities (upstream's table; 1000 for a group it does not
// list) and versions ranked in the order given. TypeMeta is set, for the
// server's bootstrap.
func LocalAPIServices(resources []*Resource) []*apiregistrationv1.APIService {
	type gv struct{ group, version string }
	seen := map[gv]bool{}
	var order []gv
	for _, r := range resources {
		if r.CustomResource {
			continue
		}
		k := gv{r.Group, r.Version}
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	// Within a group, the first version listed is the preferred one and
	// gets the highest versionPriority.
	rank := map[string]int32{}
	var out []*apiregistrationv1.APIService
	for _, k := range order {
		rank[k.group]++
		minimum, ok := groupPriorities[k.group]
		if !ok {
			minimum = 1000
		}
		out = append(out, &apiregistrationv1.APIService{
			TypeMeta:   metav1.TypeMeta{APIVersion: apiregistrationv1.SchemeGroupVersion.String(), Kind: "APIService"},
			ObjectMeta: metav1.ObjectMeta{Name: k.version + "." + k.group, Labels: map[string]string{"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
			Spec: apiregistrationv1.APIServiceSpec{Group: k.group, Version: k.version,
				GroupPriorityMinimum: minimum, VersionPriority: 16 - rank[k.group]},
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// groupPriorities is upstream's apiVersionPriorities' group minimums
// (cmd/kube-apiserver/app/aggregator.go): they order `kubectl api-resources`
// and short-name resolution across groups.
var groupPriorities = map[string]int32{
	"": 18000, "apps": 17800, "events.k8s.io": 17750, "authentication.k8s.io": 17700,
	"authorization.k8s.io": 17600, "autoscaling": 17500, "batch": 17400, "certificates.k8s.io": 17300,
	"networking.k8s.io": 17200, "policy": 17100, "rbac.authorization.k8s.io": 17000, "storage.k8s.io": 16800,
	"apiextensions.k8s.io": 16700, "admissionregistration.k8s.io": 16700, "scheduling.k8s.io": 16600,
	"coordination.k8s.io": 16500, "node.k8s.io": 16300, "discovery.k8s.io": 16200,
	"flowcontrol.apiserver.k8s.io": 16100, "internal.apiserver.k8s.io": 30, "resource.k8s.io": 15900,
	"storagemigration.k8s.io": 15800, "apiregistration.k8s.io": 17800,
}
