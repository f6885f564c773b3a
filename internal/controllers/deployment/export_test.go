package deployment

// PodTemplateHash exposes the name hash to the external integration
// tests (package deployment_test), which live outside the package because
// the cluster they start imports it.
var PodTemplateHash = podTemplateHash
