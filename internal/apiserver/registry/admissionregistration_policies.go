package registry

// admissionPolicyResources returns validating admission policies and
// their bindings.
func admissionPolicyResources() []*Resource { return nil }
