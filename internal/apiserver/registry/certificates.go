package registry

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/auth"
)

// certificates.k8s.io/v1: CertificateSigningRequests. A client asks for a
// certificate by posting a PKCS#10 request and naming a signer; the server
// records who asked (spec.username, groups, uid, extra), which the client
// cannot forge. Three parties then act through three doors, so that each
// right can be granted alone:
//
//   - the requester creates the object; its spec never changes after that
//     (the main resource ignores spec and status on update);
//   - an approver adds the Approved or Denied condition through /approval,
//     which changes nothing but the conditions;
//   - the signer writes status.certificate, or a Failed condition, through
//     /status, which cannot touch Approved or Denied.
//
// Conditions are append-only for the decisions that matter: an Approved,
// Denied or Failed condition once written is never removed, and Approved
// and Denied exclude each other.

func certificatesResources() []*Resource {
	return []*Resource{
		{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests", Kind: "CertificateSigningRequest",
			Singular: "certificatesigningrequest", ShortNames: []string{"csr"}, HasStatus: true,
			New:              func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
			PrepareForCreate: prepareCSRCreate, RecordCreator: recordCSRCreator, PrepareForUpdate: prepareCSRUpdate,
			Validate: validateCSRCreate, ValidateUpdate: validateCSRUpdate, ValidateStatusUpdate: validateCSRStatusUpdate,
			Approval: &SubresourceStrategy{PrepareForUpdate: prepareCSRApproval, ValidateUpdate: validateCSRApproval},
			Fields:   csrFields, Table: csrTable},
	}
}

// legacyUnknownSignerName is the signer v1beta1 defaulted to; v1 refuses
// it on new requests but keeps serving objects stored with it.
const legacyUnknownSignerName = "kubernetes.io/legacy-unknown"

// prepareCSRCreate drops what only the server may say: who asked, and
// any decision. A request cannot be created pre-approved.
func prepareCSRCreate(obj runtime.Object) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
}

// recordCSRCreator stamps the authenticated requester on the request:
// approvers and signers trust these fields, never the PKCS#10 subject.
func recordCSRCreator(obj runtime.Object, user *auth.User) {
	if user == nil {
		return
	}
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID = user.Name, user.UID
	csr.Spec.Groups = slices.Clone(user.Groups)
	if len(user.Extra) > 0 {
		csr.Spec.Extra = make(map[string]certificatesv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			csr.Spec.Extra[k] = slices.Clone(v)
		}
	}
}

// prepareCSRUpdate keeps spec and status: after creation a request changes
// only through its subresources (metadata excepted).
func prepareCSRUpdate(obj, old runtime.Object) {
	csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	csr.Spec = o.Spec
	csr.Status = o.Status
}

// prepareCSRApproval keeps the client's conditions and nothing else of
// spec and status, stamping the times a client left out.
func prepareCSRApproval(obj, old runtime.Object) {
	csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	stampCSRConditions(csr, o, metav1.NewTime(time.Now().Truncate(time.Second)))
	conditions := csr.Status.Conditions
	csr.Spec = o.Spec
	csr.Status = o.Status
	csr.Status.Conditions = conditions
}

// stampCSRConditions fills a missing lastUpdateTime with now, and a missing
// lastTransitionTime with the one of the stored condition of the same type
// and status (the condition did not transition), else now.
func stampCSRConditions(csr, old *certificatesv1.CertificateSigningRequest, now metav1.Time) {
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = now
		for _, oc := range old.Status.Conditions {
			if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
				c.LastTransitionTime = oc.LastTransitionTime
				break
			}
		}
	}
}

// csrRules says which writes a validation path permits beyond the
// defaults, and which defects of stored objects it tolerates: an object
// written by an older server must stay updatable, so a problem already
// present in the stored object is not held against an update.
type csrRules struct {
	// Write permissions of the subresources.
	mayDecide, mayIssue bool

	// Tolerated because the stored object already has them.
	bothApprovedAndDenied, legacySigner, duplicateConditions, emptyConditionType bool
	unknownUsages, duplicateUsages, anyCertificate                               bool
}

// csrRulesFor computes the tolerances for new against the stored old
// (nil on create).
func csrRulesFor(csr, old *certificatesv1.CertificateSigningRequest) csrRules {
	if old == nil {
		return csrRules{}
	}
	approved, denied := csrDecision(old)
	unknown, duplicate := csrUsageProblems(old.Spec.Usages)
	return csrRules{
		bothApprovedAndDenied: approved && denied,
		legacySigner:          old.Spec.SignerName == legacyUnknownSignerName,
		duplicateConditions:   csrHasDuplicateConditions(old),
		emptyConditionType:    slices.ContainsFunc(old.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool { return c.Type == "" }),
		unknownUsages:         unknown,
		duplicateUsages:       duplicate,
		// An unchanged certificate is not re-judged, nor is one replacing
		// stored content that was already unreadable.
		anyCertificate: bytes.Equal(csr.Status.Certificate, old.Status.Certificate) || checkIssuedCertificate(old.Status.Certificate) != nil,
	}
}

func validateCSRCreate(obj runtime.Object) field.ErrorList {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	allErrs := ValidateMeta(&csr.ObjectMeta, false, csrName)
	return append(allErrs, validateCSRObject(csr, csrRulesFor(csr, nil))...)
}

// csrName accepts any name that is a path segment: upstream does not care
// what requests are called (kubelets use generated names).
func csrName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

func validateCSRUpdate(obj, old runtime.Object) field.ErrorList {
	csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	allErrs := validateCSRTransition(csr, o, csrRulesFor(csr, o))
	return append(allErrs, ValidateMetaUpdate(&csr.ObjectMeta, &o.ObjectMeta)...)
}

// validateCSRStatusUpdate is the signer's door: status.certificate may be
// set once, and conditions other than Approved and Denied may be added.
// The server checks metadata itself.
func validateCSRStatusUpdate(obj, old runtime.Object) field.ErrorList {
	csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	rules := csrRulesFor(csr, o)
	rules.mayIssue = true
	return validateCSRTransition(csr, o, rules)
}

// validateCSRApproval is the approver's door: Approved or Denied may be
// added. The server checks metadata itself.
func validateCSRApproval(obj, old runtime.Object) field.ErrorList {
	csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	rules := csrRulesFor(csr, o)
	rules.mayDecide = true
	return validateCSRTransition(csr, o, rules)
}

// validateCSRTransition checks the new object, then what the write path
// may change: no decision or failure is ever removed, Approved and Denied
// change only through /approval, the certificate only through /status and
// only once.
func validateCSRTransition(csr, old *certificatesv1.CertificateSigningRequest, rules csrRules) field.ErrorList {
	allErrs := validateCSRObject(csr, rules)
	condPath := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		was, is := csrConditionsOf(old, t), csrConditionsOf(csr, t)
		switch {
		case len(is) < len(was):
			allErrs = append(allErrs, field.Forbidden(condPath, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		case t == certificatesv1.CertificateFailed || rules.mayDecide:
		case len(is) > len(was):
			allErrs = append(allErrs, field.Forbidden(condPath, fmt.Sprintf("updates may not add a condition of type %q", t)))
		case !apiequality.Semantic.DeepEqual(was, is):
			allErrs = append(allErrs, field.Forbidden(condPath, fmt.Sprintf("updates may not modify a condition of type %q", t)))
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		certPath := field.NewPath("status", "certificate")
		switch {
		case !rules.mayIssue:
			allErrs = append(allErrs, field.Forbidden(certPath, "updates may not set certificate content"))
		case len(old.Status.Certificate) > 0:
			allErrs = append(allErrs, field.Forbidden(certPath, "updates may not modify existing certificate content"))
		}
	}
	return allErrs
}

// validateCSRObject checks spec and status of one object, metadata aside.
func validateCSRObject(csr *certificatesv1.CertificateSigningRequest, rules csrRules) field.ErrorList {
	var allErrs field.ErrorList
	spec := field.NewPath("spec")
	if _, err := parseCSRRequest(csr.Spec.Request); err != nil {
		allErrs = append(allErrs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	allErrs = append(allErrs, validateCSRUsages(csr.Spec.Usages, rules, spec.Child("usages"))...)
	if csr.Spec.SignerName == legacyUnknownSignerName && !rules.legacySigner {
		allErrs = append(allErrs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		allErrs = append(allErrs, validateSignerName(csr.Spec.SignerName, spec.Child("signerName"))...)
	}
	if e := csr.Spec.ExpirationSeconds; e != nil && *e < 600 {
		allErrs = append(allErrs, field.Invalid(spec.Child("expirationSeconds"), *e, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	allErrs = append(allErrs, validateCSRConditions(csr.Status.Conditions, rules, field.NewPath("status", "conditions"))...)
	if !rules.anyCertificate {
		if err := checkIssuedCertificate(csr.Status.Certificate); err != nil {
			allErrs = append(allErrs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return allErrs
}

// parseCSRRequest decodes spec.request: one PEM "CERTIFICATE REQUEST"
// block whose PKCS#10 signature verifies, proving the requester holds the
// private key.
func parseCSRRequest(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	return req, req.CheckSignature()
}

// checkIssuedCertificate accepts an empty status.certificate or PEM
// CERTIFICATE blocks only, each parsing, without headers.
func checkIssuedCertificate(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		blocks++
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// csrKnownUsages is every key usage the API defines, sorted as upstream
// lists them in "supported values".
var csrKnownUsages = func() []string {
	all := []certificatesv1.KeyUsage{
		certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
		certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
		certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
		certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
		certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
		certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
		certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
		certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
	}
	out := make([]string, len(all))
	for i, u := range all {
		out[i] = string(u)
	}
	slices.Sort(out)
	return out
}()

func validateCSRUsages(usages []certificatesv1.KeyUsage, rules csrRules, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(usages) == 0 {
		allErrs = append(allErrs, field.Required(p, ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range usages {
		if !rules.unknownUsages && !slices.Contains(csrKnownUsages, string(u)) {
			allErrs = append(allErrs, field.NotSupported(p.Index(i), u, csrKnownUsages))
		}
		if !rules.duplicateUsages && seen[u] {
			allErrs = append(allErrs, field.Duplicate(p.Index(i), u))
		}
		seen[u] = true
	}
	return allErrs
}

// csrUsageProblems reports whether usages name an unknown usage or repeat
// one.
func csrUsageProblems(usages []certificatesv1.KeyUsage) (unknown, duplicate bool) {
	seen := map[certificatesv1.KeyUsage]bool{}
	for _, u := range usages {
		unknown = unknown || !slices.Contains(csrKnownUsages, string(u))
		duplicate = duplicate || seen[u]
		seen[u] = true
	}
	return unknown, duplicate
}

// validateSignerName checks the "<domain>/<path>" form signer names take:
// the domain at least two DNS labels, the path dot-separated DNS
// subdomains, so that "<fqdn>/<namespace>.<name>" fits.
func validateSignerName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || strings.Contains(path, "/") {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var allErrs field.ErrorList
	if len(domain) > utilvalidation.DNS1123SubdomainMaxLength {
		allErrs = append(allErrs, field.TooLong(p, "", utilvalidation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		// Only the first bad label is reported: the rest would repeat it.
		if msgs := utilvalidation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, msg := range msgs {
				allErrs = append(allErrs, field.Invalid(p, domain, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	if len(labels) < 2 {
		allErrs = append(allErrs, field.Invalid(p, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(path, ".") {
		if msgs := utilvalidation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, msg := range msgs {
				allErrs = append(allErrs, field.Invalid(p, path, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	maxPath := utilvalidation.DNS1123SubdomainMaxLength + utilvalidation.DNS1123LabelMaxLength + 1
	if maxName := utilvalidation.DNS1123SubdomainMaxLength + maxPath + 1; len(name) > maxName {
		allErrs = append(allErrs, field.TooLong(p, "", maxName))
	}
	return allErrs
}

// csrTrueOnly are the condition types that only exist as True: they are
// decisions, not observations.
var csrTrueOnly = []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed}

func validateCSRConditions(conds []certificatesv1.CertificateSigningRequestCondition, rules csrRules, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	var approved, denied bool
	for i, c := range conds {
		ip := p.Index(i)
		if c.Type == "" && !rules.emptyConditionType {
			allErrs = append(allErrs, field.Required(ip.Child("type"), ""))
		}
		allowed := []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
		if slices.Contains(csrTrueOnly, c.Type) {
			allowed = []string{string(corev1.ConditionTrue)}
		}
		switch {
		case c.Status == "":
			allErrs = append(allErrs, field.Required(ip.Child("status"), ""))
		case !slices.Contains(allowed, string(c.Status)):
			allErrs = append(allErrs, field.NotSupported(ip.Child("status"), c.Status, allowed))
		}
		if !rules.bothApprovedAndDenied {
			switch c.Type {
			case certificatesv1.CertificateApproved:
				approved = true
				if denied {
					allErrs = append(allErrs, field.Invalid(p, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			case certificatesv1.CertificateDenied:
				denied = true
				if approved {
					allErrs = append(allErrs, field.Invalid(p, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			}
		}
		if !rules.duplicateConditions && seen[c.Type] {
			allErrs = append(allErrs, field.Duplicate(ip.Child("type"), c.Type))
		}
		seen[c.Type] = true
	}
	return allErrs
}

func csrConditionsOf(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

func csrHasDuplicateConditions(csr *certificatesv1.CertificateSigningRequest) bool {
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range csr.Status.Conditions {
		if seen[c.Type] {
			return true
		}
		seen[c.Type] = true
	}
	return false
}

// csrDecision reports whether the request carries Approved and Denied
// conditions (whatever their status: validation keeps them True).
func csrDecision(csr *certificatesv1.CertificateSigningRequest) (approved, denied bool) {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		}
	}
	return approved, denied
}

func csrFields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
}

var csrTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		ageColumn,
		{Name: "SignerName", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]},
		// Upstream describes REQUESTOR with spec.request's doc; kept.
		{Name: "Requestor", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["request"]},
		{Name: "RequestedDuration", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]},
		{Name: "Condition", Type: "string", Description: certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]},
	},
	Row: func(obj runtime.Object) []interface{} {
		csr := obj.(*certificatesv1.CertificateSigningRequest)
		signer := csr.Spec.SignerName
		if signer == "" {
			signer = "<none>"
		}
		requested := "<none>"
		if e := csr.Spec.ExpirationSeconds; e != nil {
			requested = duration.HumanDuration(time.Duration(*e) * time.Second)
		}
		return []interface{}{csr.Name, Age(csr.CreationTimestamp), signer, csr.Spec.Username, requested, csrCondition(csr)}
	},
}

// csrCondition is the CONDITION column: the decision (Denied wins over
// Approved, as it should never be overridden), then Failed and Issued.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	approved, denied := csrDecision(csr)
	status := "Pending"
	switch {
	case denied:
		status = "Denied"
	case approved:
		status = "Approved"
	}
	if len(csrConditionsOf(csr, certificatesv1.CertificateFailed)) > 0 {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}
