package registry

// admissionregistration.k8s.io/v1: how cluster operators add their own
// admission policy. Webhook configurations name HTTPS endpoints the API
// server calls on matching writes; validating admission policies are CEL
// expressions the API server evaluates itself, put into force by
// bindings.

func admissionregistrationResources() []*Resource {
	var out []*Resource
	out = append(out, webhookConfigurationResources()...)
	out = append(out, admissionPolicyResources()...)
	return out
}
