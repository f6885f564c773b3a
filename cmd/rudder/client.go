package main

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

// clientConfig loads a kubeconfig (the explicit path, else $KUBECONFIG,
// else ~/.kube/config) for one of rudder's components: protobuf, and no
// client-side throttling (the server's own limits apply).
func clientConfig(kubeconfig, userAgent string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	rc.UserAgent = userAgent
	return rc, nil
}
