package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// runc drives the OCI runtime binary with its own state root.
type runc struct {
	bin  string
	root string
}

func (r *runc) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, r.bin, append([]string{"--root", r.root}, args...)...)
}

// run runs a runc subcommand and returns its stderr in the error.
func (r *runc) run(ctx context.Context, args ...string) error {
	cmd := r.command(ctx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("runc %s: %w: %s", args[0], err, runcMessage(out.String()))
	}
	return nil
}

func (r *runc) start(ctx context.Context, id string) error {
	return r.run(ctx, "start", id)
}

func (r *runc) kill(ctx context.Context, id, sig string, all bool) error {
	args := []string{"kill"}
	if all {
		args = append(args, "--all")
	}
	return r.run(ctx, append(args, id, sig)...)
}

func (r *runc) delete(ctx context.Context, id string) error {
	return r.run(ctx, "delete", "--force", id)
}

type runcState struct {
	ID     string `json:"id"`
	Pid    int    `json:"pid"`
	Status string `json:"status"` // created, running, paused, stopped
}

// state asks runc about a container; errNotFound when runc does not know it.
func (r *runc) state(ctx context.Context, id string) (runcState, error) {
	cmd := r.command(ctx, "state", id)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var st runcState
	if err := cmd.Run(); err != nil {
		if strings.Contains(errb.String(), "does not exist") {
			return st, fmt.Errorf("runc state %s: %w", id, errNotFound)
		}
		return st, fmt.Errorf("runc state %s: %w: %s", id, err, runcMessage(errb.String()))
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		return st, fmt.Errorf("runc state %s: %w", id, err)
	}
	return st, nil
}

func (r *runc) update(ctx context.Context, id string, resourcesJSON []byte) error {
	cmd := r.command(ctx, "update", "-r", "-", id)
	cmd.Stdin = bytes.NewReader(resourcesJSON)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("runc update: %w: %s", err, runcMessage(out.String()))
	}
	return nil
}
