package admission

import (
	"context"

	"github.com/rudder-dev/rudder/internal/admit"
)

// The contract between the API server and the chain (what a write looks
// like, what a plugin may do with it) lives in internal/admit, so that the
// API server runs the chain without importing the plugins. These names
// are that contract, for the plugins here.
type (
	Operation  = admit.Operation
	Attributes = admit.Attributes
	Mutator    = admit.Mutator
	Validator  = admit.Validator
	Plugin     = admit.Plugin

	ResourceKind   = admit.ResourceKind
	ServedResource = admit.ServedResource
)

const (
	Create  = admit.Create
	Update  = admit.Update
	Delete  = admit.Delete
	Connect = admit.Connect
)

var _ admit.Interface = (*Chain)(nil)

// Chain runs plugins in order: every mutator, then every validator. The
// first error stops the chain and is the answer to the request.
//
// The mutating half may run twice, as upstream's does: when a mutating
// webhook changes the object, every mutator runs once more, in order, so
// that the in-tree plugins (which are idempotent) and the webhooks with
// reinvocationPolicy IfNeeded see what the later ones did. A plugin
// learns which round it is in from the context (reinvocationFrom).
type Chain struct {
	plugins []Plugin
}

// NewChain returns a chain of plugins in the given order.
func NewChain(plugins ...Plugin) *Chain { return &Chain{plugins: plugins} }

// Admit runs the mutating half of the chain, twice when a plugin asks
// for reinvocation in the first round.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	rc := &reinvocation{}
	ctx = context.WithValue(ctx, reinvocationKey{}, rc)
	if err := c.admitOnce(ctx, a); err != nil {
		return err
	}
	if !rc.should {
		return nil
	}
	rc.round = 1
	return c.admitOnce(ctx, a)
}

func (c *Chain) admitOnce(ctx context.Context, a *Attributes) error {
	for _, p := range c.plugins {
		if m, ok := p.(Mutator); ok {
			if err := m.Admit(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// reinvocation is the state of one Chain.Admit: which round runs,
// whether a second one is wanted, and what plugins remember between
// rounds. It belongs to one request, so no lock.
type reinvocation struct {
	round  int
	should bool
	states map[string]any
}

type reinvocationKey struct{}

// reinvocationFrom returns the request's reinvocation state; outside a
// chain (a plugin called on its own) it is a fresh first round.
func reinvocationFrom(ctx context.Context) *reinvocation {
	if rc, ok := ctx.Value(reinvocationKey{}).(*reinvocation); ok {
		return rc
	}
	return &reinvocation{}
}

func (r *reinvocation) isReinvoke() bool { return r.round > 0 }

// requestReinvoke asks for the second round; in the second round it
// does nothing: there is never a third.
func (r *reinvocation) requestReinvoke() { r.should = true }

func (r *reinvocation) state(plugin string) any { return r.states[plugin] }

func (r *reinvocation) setState(plugin string, v any) {
	if r.states == nil {
		r.states = map[string]any{}
	}
	r.states[plugin] = v
}

// Validate runs the validating half of the chain.
func (c *Chain) Validate(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	for _, p := range c.plugins {
		if v, ok := p.(Validator); ok {
			if err := v.Validate(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}
