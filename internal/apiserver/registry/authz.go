package registry

import (
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// authentication.k8s.io/v1 and authorization.k8s.io/v1: the review
// resources. Nothing of them is stored: a client posts a question (is
// this token valid? may this user do that? what may I do here?) and the
// API server answers in the status of the object it sends back, with the
// very authenticator and authorizer that guard its own requests. They are
// Virtual resources; the answers are computed in the API server, which
// owns those; here are their names and the checks on the question.

var createOnly = []string{"create"}

func authenticationResources() []*Resource {
	const g = authenticationv1.GroupName
	return []*Resource{
		{Group: g, Version: "v1", Resource: "selfsubjectreviews", Kind: "SelfSubjectReview", Singular: "selfsubjectreview",
			Virtual: true, Verbs: createOnly, New: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }},
		{Group: g, Version: "v1", Resource: "tokenreviews", Kind: "TokenReview", Singular: "tokenreview",
			Virtual: true, Verbs: createOnly, New: func() runtime.Object { return &authenticationv1.TokenReview{} }},
	}
}

func authorizationResources() []*Resource {
	const g = authorizationv1.GroupName
	return []*Resource{
		{Group: g, Version: "v1", Resource: "localsubjectaccessreviews", Kind: "LocalSubjectAccessReview", Singular: "localsubjectaccessreview",
			Namespaced: true, Virtual: true, Verbs: createOnly,
			New:      func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
			Validate: validateLocalSubjectAccessReview},
		{Group: g, Version: "v1", Resource: "selfsubjectaccessreviews", Kind: "SelfSubjectAccessReview", Singular: "selfsubjectaccessreview",
			Virtual: true, Verbs: createOnly,
			New:      func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			Validate: validateSelfSubjectAccessReview},
		{Group: g, Version: "v1", Resource: "selfsubjectrulesreviews", Kind: "SelfSubjectRulesReview", Singular: "selfsubjectrulesreview",
			Virtual: true, Verbs: createOnly, New: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }},
		{Group: g, Version: "v1", Resource: "subjectaccessreviews", Kind: "SubjectAccessReview", Singular: "subjectaccessreview",
			Virtual: true, Verbs: createOnly,
			New:      func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
			Validate: validateSubjectAccessReview},
	}
}

// validateAccessQuestion checks what every access review asks: exactly one
// of resource or non-resource attributes.
func validateAccessQuestion(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ra != nil && nra != nil {
		errs = append(errs, field.Invalid(spec.Child("nonResourceAttributes"), nra, "cannot be specified in combination with resourceAttributes"))
	}
	if ra == nil && nra == nil {
		errs = append(errs, field.Invalid(spec.Child("resourceAttributes"), nra, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	return errs
}

func validateSubjectAccessSpec(spec *authorizationv1.SubjectAccessReviewSpec, path *field.Path) field.ErrorList {
	errs := validateAccessQuestion(spec.ResourceAttributes, spec.NonResourceAttributes, path)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(path.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

// emptyMeta reports whether m carries nothing a client set, ignoring
// managed fields as upstream does (an empty map is as good as none): a
// review is not an object with a name.
func emptyMeta(m metav1.ObjectMeta) bool {
	m.ManagedFields = nil
	return apiequality.Semantic.DeepEqual(m, metav1.ObjectMeta{})
}

func validateSubjectAccessReview(obj runtime.Object) field.ErrorList {
	sar := obj.(*authorizationv1.SubjectAccessReview)
	errs := validateSubjectAccessSpec(&sar.Spec, field.NewPath("spec"))
	if !emptyMeta(sar.ObjectMeta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), metaString(sar.ObjectMeta), "must be empty"))
	}
	return errs
}

func validateSelfSubjectAccessReview(obj runtime.Object) field.ErrorList {
	sar := obj.(*authorizationv1.SelfSubjectAccessReview)
	errs := validateAccessQuestion(sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes, field.NewPath("spec"))
	if !emptyMeta(sar.ObjectMeta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), metaString(sar.ObjectMeta), "must be empty"))
	}
	return errs
}

// validateLocalSubjectAccessReview also ties the question to the review's
// namespace (which the API server sets from the URL): a namespace admin
// may ask about their namespace only.
func validateLocalSubjectAccessReview(obj runtime.Object) field.ErrorList {
	sar := obj.(*authorizationv1.LocalSubjectAccessReview)
	errs := validateSubjectAccessSpec(&sar.Spec, field.NewPath("spec"))
	m := sar.ObjectMeta
	m.Namespace = ""
	if !emptyMeta(m) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), metaString(sar.ObjectMeta), "must be empty except for namespace"))
	}
	if ra := sar.Spec.ResourceAttributes; ra != nil && ra.Namespace != sar.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if sar.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), sar.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	return errs
}

func metaString(m metav1.ObjectMeta) string { return fmt.Sprintf("%+v", m) }

// TokenRequest limits: a token lives at least ten minutes (shorter ones
// would expire while a client still uses them) and at most 2^32 seconds.
const (
	DefaultTokenExpirationSeconds = 60 * 60
	MinTokenExpirationSeconds     = 10 * 60
	MaxTokenExpirationSeconds     = 1 << 32
)

// DefaultTokenRequest fills what upstream's defaults fill: a one-hour
// lifetime.
func DefaultTokenRequest(tr *authenticationv1.TokenRequest) {
	if tr.Spec.ExpirationSeconds == nil {
		s := int64(DefaultTokenExpirationSeconds)
		tr.Spec.ExpirationSeconds = &s
	}
}

// ValidateTokenRequest checks a defaulted TokenRequest.
func ValidateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "expirationSeconds")
	if s := tr.Spec.ExpirationSeconds; s != nil {
		if *s < MinTokenExpirationSeconds {
			errs = append(errs, field.Invalid(path, *s, "may not specify a duration less than 10 minutes"))
		}
		if *s > MaxTokenExpirationSeconds {
			errs = append(errs, field.Invalid(path, *s, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	return errs
}
