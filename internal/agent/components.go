package agent

import (
	"context"
	"errors"
)

// startComponents starts the runtime and the kubelet.
func (a *Agent) startComponents(ctx context.Context) error {
	return errors.New("agent: the runtime and kubelet are not wired yet")
}
