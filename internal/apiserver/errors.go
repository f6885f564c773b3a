package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/storage"
)

// toStatusError maps any error a handler meets to the API error a client
// sees. It is the one place where storage error classes become HTTP codes.
// gr and name describe the object the request was about.
func toStatusError(err error, gr schema.GroupResource, name string) *apierrors.StatusError {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se
	}
	var aps apierrors.APIStatus
	if errors.As(err, &aps) {
		return &apierrors.StatusError{ErrStatus: aps.Status()}
	}
	var tooOld *tooOldError
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(conflictMessage))
	case errors.As(err, &tooOld):
		return apierrors.NewResourceExpired(tooOld.Error())
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %v", err))
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	case errors.Is(err, context.Canceled):
		return apierrors.NewTimeoutError("request was cancelled", 0)
	}
	slog.Error("internal error", "resource", gr.String(), "name", name, "err", err)
	return apierrors.NewInternalError(err)
}

// tooOldError is a watch from a revision the watch cache no longer holds.
// Its text is upstream's cacher's, word for word: clients (and upstream's
// e2e tests) match it. It is an ErrCompacted for errors.Is.
type tooOldError struct {
	requested, oldest int64
}

func (e *tooOldError) Error() string {
	return fmt.Sprintf("too old resource version: %d (%d)", e.requested, e.oldest)
}

func (e *tooOldError) Unwrap() error { return storage.ErrCompacted }

const conflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// statusFor fills the kind of a Status for the wire.
func statusFor(se *apierrors.StatusError) *metav1.Status {
	st := se.ErrStatus
	st.Kind = "Status"
	st.APIVersion = "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	return &st
}
