package registry

// autoscaling: HorizontalPodAutoscalers, served as v2 (the stored
// version) and v1.

func autoscalingResources() []*Resource { return nil }
