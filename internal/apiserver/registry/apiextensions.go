package registry

// apiextensions.k8s.io/v1: CustomResourceDefinitions.

func apiextensionsResources() []*Resource { return nil }
