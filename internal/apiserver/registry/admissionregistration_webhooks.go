package registry

// webhookConfigurationResources returns mutating and validating webhook
// configurations.
func webhookConfigurationResources() []*Resource { return nil }
