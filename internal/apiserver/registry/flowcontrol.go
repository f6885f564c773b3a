package registry

import (
	"math"
	"slices"
	"strconv"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// flowcontrol.apiserver.k8s.io/v1: API Priority and Fairness. FlowSchemas
// sort requests into priority levels (PriorityLevelConfigurations) by who
// asks for what. rudder serves and validates the objects and keeps
// upstream's mandatory and suggested configuration
// (FlowControlBootstrap); it does not enforce them (APF is the HA and
// security issue's).

func flowcontrolResources() []*Resource {
	const g = "flowcontrol.apiserver.k8s.io"
	return []*Resource{
		{Group: g, Version: "v1", Resource: "flowschemas", Kind: "FlowSchema", Singular: "flowschema", HasStatus: true, HasGeneration: true,
			New:     func() runtime.Object { return &flowcontrolv1.FlowSchema{} },
			Default: defaultFlowSchema, PrepareForCreate: func(obj runtime.Object) { obj.(*flowcontrolv1.FlowSchema).Status = flowcontrolv1.FlowSchemaStatus{} },
			Validate: validateFlowSchema, ValidateUpdate: validateFlowSchemaUpdate,
			ValidateStatusUpdate: validateFlowSchemaStatusUpdate, Table: flowSchemaTable},
		{Group: g, Version: "v1", Resource: "prioritylevelconfigurations", Kind: "PriorityLevelConfiguration", Singular: "prioritylevelconfiguration",
			HasStatus: true, HasGeneration: true,
			New:     func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
			Default: defaultPriorityLevel,
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*flowcontrolv1.PriorityLevelConfiguration).Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
			},
			Validate: validatePriorityLevel, ValidateUpdate: validatePriorityLevelUpdate,
			ValidateStatusUpdate: validatePriorityLevelStatusUpdate, Table: priorityLevelTable},
	}
}

const flowMaxMatchingPrecedence = 10000

var (
	flowDistinguisherMethods = []string{string(flowcontrolv1.FlowDistinguisherMethodByUserType), string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType)}
	flowSubjectKinds         = []string{string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindUser)}
	flowPriorityLevelTypes   = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	flowLimitResponseTypes   = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

// FlowSchemas

func defaultFlowSchema(obj runtime.Object) {
	if s := &obj.(*flowcontrolv1.FlowSchema).Spec; s.MatchingPrecedence == 0 {
		s.MatchingPrecedence = 1000
	}
}

func validateFlowSchema(obj runtime.Object) field.ErrorList {
	fs := obj.(*flowcontrolv1.FlowSchema)
	allErrs := validateCoreMeta(&fs.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	if fs.Spec.PriorityLevelConfiguration.Name == "" {
		allErrs = append(allErrs, field.Required(spec.Child("priorityLevelConfiguration", "name"), "must reference a priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(fs.Spec.PriorityLevelConfiguration.Name, false) {
			allErrs = append(allErrs, field.Invalid(spec.Child("priorityLevelConfiguration", "name"), fs.Spec.PriorityLevelConfiguration.Name, msg))
		}
	}
	if p := fs.Spec.MatchingPrecedence; p <= 0 || p > flowMaxMatchingPrecedence {
		allErrs = append(allErrs, field.Invalid(spec.Child("matchingPrecedence"), p, "must be a positive value no more than 10000"))
	}
	if fs.Name == flowcontrolv1.FlowSchemaNameExempt && fs.Spec.MatchingPrecedence != 1 {
		allErrs = append(allErrs, field.Invalid(spec.Child("matchingPrecedence"), fs.Spec.MatchingPrecedence, "must be 1 for the exempt flow schema"))
	}
	if d := fs.Spec.DistinguisherMethod; d != nil && !slices.Contains(flowDistinguisherMethods, string(d.Type)) {
		allErrs = append(allErrs, field.NotSupported(spec.Child("distinguisherMethod", "type"), d.Type, flowDistinguisherMethods))
	}
	for i, rule := range fs.Spec.Rules {
		allErrs = append(allErrs, flowValidateRule(&rule, spec.Child("rules").Index(i))...)
	}
	return allErrs
}

func flowValidateRule(rule *flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rule.Subjects) == 0 {
		allErrs = append(allErrs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i, s := range rule.Subjects {
		allErrs = append(allErrs, flowValidateSubject(&s, p.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		allErrs = append(allErrs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i, r := range rule.ResourceRules {
		rp := p.Child("resourceRules").Index(i)
		allErrs = append(allErrs, flowValidateList(r.Verbs, flowcontrolv1.VerbAll, rp.Child("verbs"), "verbs")...)
		allErrs = append(allErrs, flowValidateList(r.APIGroups, flowcontrolv1.APIGroupAll, rp.Child("apiGroups"), "resource rules must supply at least one api group")...)
		allErrs = append(allErrs, flowValidateList(r.Resources, flowcontrolv1.ResourceAll, rp.Child("resources"), "resource rules must supply at least one resource")...)
		if len(r.Namespaces) == 0 && !r.ClusterScope {
			allErrs = append(allErrs, field.Required(rp.Child("namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"))
		} else if len(r.Namespaces) > 0 {
			allErrs = append(allErrs, flowValidateList(r.Namespaces, flowcontrolv1.NamespaceEvery, rp.Child("namespaces"), "")...)
		}
	}
	for i, r := range rule.NonResourceRules {
		np := p.Child("nonResourceRules").Index(i)
		allErrs = append(allErrs, flowValidateList(r.Verbs, flowcontrolv1.VerbAll, np.Child("verbs"), "verbs")...)
		allErrs = append(allErrs, flowValidateList(r.NonResourceURLs, flowcontrolv1.NonResourceAll, np.Child("nonResourceURLs"), "nonResourceURLs")...)
	}
	return allErrs
}

// flowValidateList: required (with the message need) and, when it holds
// the wildcard, nothing else.
func flowValidateList(values []string, all string, p *field.Path, need string) field.ErrorList {
	if len(values) == 0 {
		if need == "" {
			return nil
		}
		msg := need
		if need == "verbs" || need == "nonResourceURLs" {
			msg = need + " must contain at least one value"
		}
		return field.ErrorList{field.Required(p, msg)}
	}
	if len(values) > 1 && slices.Contains(values, all) {
		return field.ErrorList{field.Invalid(p, values, "if '"+all+"' is present, must not specify other "+p.String())}
	}
	return nil
}

func flowValidateSubject(s *flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		switch {
		case s.ServiceAccount == nil:
			allErrs = append(allErrs, field.Required(p.Child("serviceAccount"), "serviceAccount is required when subject kind is 'ServiceAccount'"))
		default:
			if s.ServiceAccount.Name == "" {
				allErrs = append(allErrs, field.Required(p.Child("serviceAccount", "name"), ""))
			}
			if s.ServiceAccount.Namespace == "" {
				allErrs = append(allErrs, field.Required(p.Child("serviceAccount", "namespace"), ""))
			}
		}
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil || s.User.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("user", "name"), ""))
		}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil || s.Group.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("group", "name"), ""))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(p.Child("kind"), s.Kind, flowSubjectKinds))
	}
	return allErrs
}

func validateFlowSchemaUpdate(obj, old runtime.Object) field.ErrorList {
	fs, o := obj.(*flowcontrolv1.FlowSchema), old.(*flowcontrolv1.FlowSchema)
	allErrs := validateFlowSchema(obj)
	return dedupFieldErrors(append(allErrs, validateCoreMetaUpdate(&fs.ObjectMeta, &o.ObjectMeta)...))
}

// validateFlowSchemaStatusUpdate: conditions need a type, each once.
func validateFlowSchemaStatusUpdate(obj, old runtime.Object) field.ErrorList {
	fs, o := obj.(*flowcontrolv1.FlowSchema), old.(*flowcontrolv1.FlowSchema)
	allErrs := validateCoreMetaUpdate(&fs.ObjectMeta, &o.ObjectMeta)
	types := make([]flowcontrolv1.FlowSchemaConditionType, len(fs.Status.Conditions))
	for i, c := range fs.Status.Conditions {
		types[i] = c.Type
	}
	return append(allErrs, flowValidateConditionTypes(types)...)
}

// flowValidateConditionTypes: each status condition names a type, once.
func flowValidateConditionTypes[T ~string](types []T) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[T]bool{}
	for i, t := range types {
		p := field.NewPath("status", "conditions").Index(i)
		if t == "" {
			allErrs = append(allErrs, field.Required(p.Child("type"), "must not be empty"))
		} else if seen[t] {
			allErrs = append(allErrs, field.Duplicate(p.Child("type"), t))
		}
		seen[t] = true
	}
	return allErrs
}

var flowSchemaTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "PriorityLevel", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]},
		{Name: "MatchingPrecedence", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]},
		{Name: "DistinguisherMethod", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]},
		ageColumn,
		{Name: "MissingPL", Type: "string", Description: "references a broken or non-existent PriorityLevelConfiguration"},
	},
	Row: func(obj runtime.Object) []interface{} {
		fs := obj.(*flowcontrolv1.FlowSchema)
		method := "<none>"
		if fs.Spec.DistinguisherMethod != nil {
			method = string(fs.Spec.DistinguisherMethod.Type)
		}
		missing := "?"
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(c.Status)
			}
		}
		return []interface{}{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, strconv.Itoa(int(fs.Spec.MatchingPrecedence)),
			method, Age(fs.CreationTimestamp), missing}
	},
}

// PriorityLevelConfigurations

// defaultPriorityLevel fills v1's defaults: 30 shares for a limited level
// (0 for exempt), nothing lendable, and queuing of 64 queues, hands of 8,
// 50 requests a queue.
func defaultPriorityLevel(obj runtime.Object) {
	s := &obj.(*flowcontrolv1.PriorityLevelConfiguration).Spec
	if l := s.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = new(int32(30))
		}
		if l.LendablePercent == nil {
			l.LendablePercent = new(int32(0))
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.Queues == 0 {
				q.Queues = 64
			}
			if q.HandSize == 0 {
				q.HandSize = 8
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = 50
			}
		}
	}
	if e := s.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = new(int32(0))
		}
		if e.LendablePercent == nil {
			e.LendablePercent = new(int32(0))
		}
	}
}

func validatePriorityLevel(obj runtime.Object) field.ErrorList {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	allErrs := validateCoreMeta(&pl.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	s := &pl.Spec
	switch s.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if s.Limited != nil {
			allErrs = append(allErrs, field.Forbidden(spec.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := s.Exempt; e != nil {
			allErrs = append(allErrs, flowValidateShares(e.NominalConcurrencyShares, e.LendablePercent, spec.Child("exempt"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if s.Exempt != nil {
			allErrs = append(allErrs, field.Forbidden(spec.Child("exempt"), "must be nil if the type is Limited"))
		}
		if s.Limited == nil {
			allErrs = append(allErrs, field.Required(spec.Child("limited"), "must not be empty when type is Limited"))
		} else {
			allErrs = append(allErrs, flowValidateLimited(s.Limited, spec.Child("limited"))...)
		}
	default:
		allErrs = append(allErrs, field.NotSupported(spec.Child("type"), s.Type, flowPriorityLevelTypes))
	}
	if (pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (s.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		allErrs = append(allErrs, field.Invalid(spec.Child("type"), s.Type,
			"type must be 'Exempt' if and only if name is 'exempt'"))
	}
	return allErrs
}

func flowValidateShares(shares, lendable *int32, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if shares != nil && *shares < 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("nominalConcurrencyShares"), *shares, "must be a non-negative integer"))
	}
	if lendable != nil && (*lendable < 0 || *lendable > 100) {
		allErrs = append(allErrs, field.Invalid(p.Child("lendablePercent"), *lendable, "must be between 0 and 100, inclusive"))
	}
	return allErrs
}

func flowValidateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, p *field.Path) field.ErrorList {
	allErrs := flowValidateShares(l.NominalConcurrencyShares, l.LendablePercent, p)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	rp := p.Child("limitResponse")
	switch l.LimitResponse.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if l.LimitResponse.Queuing != nil {
			allErrs = append(allErrs, field.Forbidden(rp.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		q := l.LimitResponse.Queuing
		if q == nil {
			allErrs = append(allErrs, field.Required(rp.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited"))
			break
		}
		qp := rp.Child("queuing")
		if q.QueueLengthLimit <= 0 {
			allErrs = append(allErrs, field.Invalid(qp.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
		}
		if q.Queues <= 0 {
			allErrs = append(allErrs, field.Invalid(qp.Child("queues"), q.Queues, "must be positive"))
		} else if q.Queues > 1 {
			// Shuffle sharding: the hand fits the deck, and the entropy of
			// dealing it (handSize * log2(queues)) stays within 60 bits.
			switch {
			case q.HandSize <= 0:
				allErrs = append(allErrs, field.Invalid(qp.Child("handSize"), q.HandSize, "must be positive"))
			case q.HandSize > q.Queues:
				allErrs = append(allErrs, field.Invalid(qp.Child("handSize"), q.HandSize, "should not be greater than queues ("+strconv.Itoa(int(q.Queues))+")"))
			case float64(q.HandSize)*math.Log2(float64(q.Queues)) > 60:
				allErrs = append(allErrs, field.Invalid(qp.Child("handSize"), q.HandSize,
					"required entropy bits of deckSize "+strconv.Itoa(int(q.Queues))+" and handSize "+strconv.Itoa(int(q.HandSize))+" should not be greater than 60"))
			}
		}
	default:
		allErrs = append(allErrs, field.NotSupported(rp.Child("type"), l.LimitResponse.Type, flowLimitResponseTypes))
	}
	return allErrs
}

func validatePriorityLevelUpdate(obj, old runtime.Object) field.ErrorList {
	pl, o := obj.(*flowcontrolv1.PriorityLevelConfiguration), old.(*flowcontrolv1.PriorityLevelConfiguration)
	allErrs := validatePriorityLevel(obj)
	return dedupFieldErrors(append(allErrs, validateCoreMetaUpdate(&pl.ObjectMeta, &o.ObjectMeta)...))
}

func validatePriorityLevelStatusUpdate(obj, old runtime.Object) field.ErrorList {
	pl, o := obj.(*flowcontrolv1.PriorityLevelConfiguration), old.(*flowcontrolv1.PriorityLevelConfiguration)
	allErrs := validateCoreMetaUpdate(&pl.ObjectMeta, &o.ObjectMeta)
	types := make([]flowcontrolv1.PriorityLevelConfigurationConditionType, len(pl.Status.Conditions))
	for i, c := range pl.Status.Conditions {
		types[i] = c.Type
	}
	return append(allErrs, flowValidateConditionTypes(types)...)
}

// priorityLevelTable prints "<none>" for what the level's type lacks.
var priorityLevelTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Type", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]},
		{Name: "NominalConcurrencyShares", Type: "string", Description: flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]},
		{Name: "Queues", Type: "string", Description: flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"]},
		{Name: "HandSize", Type: "string", Description: flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"]},
		{Name: "QueueLengthLimit", Type: "string", Description: flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
		shares, queues, hand, limit := "<none>", "<none>", "<none>", "<none>"
		if l := pl.Spec.Limited; l != nil {
			if l.NominalConcurrencyShares != nil {
				shares = strconv.Itoa(int(*l.NominalConcurrencyShares))
			}
			if q := l.LimitResponse.Queuing; q != nil {
				queues, hand, limit = strconv.Itoa(int(q.Queues)), strconv.Itoa(int(q.HandSize)), strconv.Itoa(int(q.QueueLengthLimit))
			}
		}
		return []interface{}{pl.Name, string(pl.Spec.Type), shares, queues, hand, limit, Age(pl.CreationTimestamp)}
	},
}
