package main

import (
	"context"
	"log/slog"

	"k8s.io/klog/v2"
)

// routeKlog sends the client libraries' klog output through slog, one
// level down: their Info lines ("Waiting for caches to sync") are Debug
// for a rudder user, their errors stay errors.
func routeKlog() {
	klog.SetSlogLogger(slog.New(demote{slog.Default().Handler()}))
}

type demote struct{ slog.Handler }

func (d demote) Enabled(ctx context.Context, l slog.Level) bool {
	return d.Handler.Enabled(ctx, lower(l))
}

func (d demote) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lower(r.Level)
	return d.Handler.Handle(ctx, r)
}

func (d demote) WithAttrs(a []slog.Attr) slog.Handler { return demote{d.Handler.WithAttrs(a)} }
func (d demote) WithGroup(n string) slog.Handler      { return demote{d.Handler.WithGroup(n)} }

func lower(l slog.Level) slog.Level {
	if l < slog.LevelError {
		return l - 4
	}
	return l
}
