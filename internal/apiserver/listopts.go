package apiserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// listOptions are the query parameters of list and watch.
type listOptions struct {
	labels            labels.Selector
	fields            fields.Selector
	resourceVersion   string
	rvMatch           metav1.ResourceVersionMatch
	limit             int64
	continueToken     string
	allowBookmarks    bool
	sendInitialEvents *bool
	timeoutSeconds    int64
	rv                int64 // resourceVersion parsed; 0 when "" or "0"
}

func parseListOptions(q url.Values, watch bool) (*listOptions, error) {
	o := &listOptions{labels: labels.Everything(), fields: fields.Everything()}
	var errs field.ErrorList
	if s := q.Get("labelSelector"); s != "" {
		sel, err := labels.Parse(s)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
		o.labels = sel
	}
	if s := q.Get("fieldSelector"); s != "" {
		sel, err := fields.ParseSelector(s)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		o.fields = sel
	}
	o.resourceVersion = q.Get("resourceVersion")
	if o.resourceVersion != "" {
		rv, err := strconv.ParseInt(o.resourceVersion, 10, 64)
		if err != nil || rv < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %q", o.resourceVersion))
		}
		o.rv = rv
	}
	o.rvMatch = metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))
	switch o.rvMatch {
	case "", metav1.ResourceVersionMatchNotOlderThan, metav1.ResourceVersionMatchExact:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("resourceVersionMatch"), o.rvMatch, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan), ""}))
	}
	if o.rvMatch != "" && o.resourceVersion == "" && !(watch && o.rvMatch == metav1.ResourceVersionMatchNotOlderThan) {
		errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch is forbidden unless resourceVersion is provided"))
	}
	if o.rvMatch == metav1.ResourceVersionMatchExact && o.rv == 0 && o.resourceVersion != "" {
		errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""))
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid limit: %q", s))
		}
		if n > 0 {
			o.limit = n
		}
	}
	o.continueToken = q.Get("continue")
	if o.continueToken != "" && o.resourceVersion != "" && o.resourceVersion != "0" {
		errs = append(errs, field.Forbidden(field.NewPath("resourceVersion"), "specifying resource version is not allowed when using continue"))
	}
	o.allowBookmarks = isTrue(q.Get("allowWatchBookmarks"))
	if s := q.Get("sendInitialEvents"); s != "" {
		b := isTrue(s)
		o.sendInitialEvents = &b
		if !watch {
			errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
		} else if b && (!o.allowBookmarks || o.rvMatch != metav1.ResourceVersionMatchNotOlderThan) {
			if !o.allowBookmarks {
				errs = append(errs, field.Forbidden(field.NewPath("allowWatchBookmarks"), "sendInitialEvents requires setting allowWatchBookmarks to true"))
			}
			if o.rvMatch != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
			}
		}
	}
	if s := q.Get("timeoutSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds: %q", s))
		}
		// Beyond ~292 years a time.Duration overflows, and a watch asked
		// to last that long would end at once instead.
		o.timeoutSeconds = min(n, math.MaxInt64/int64(time.Second))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", errs)
	}
	return o, nil
}

// continueToken is the opaque list position handed to clients, in
// upstream's format so tokens look and behave the same: the revision the
// list is pinned to and the key (relative to the list's prefix) to resume
// from. rv -1 means "resume at the latest revision" (after a 410).
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

func encodeContinue(rev int64, relKey string) string {
	data, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rev, StartKey: relKey})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(token, prefix string) (startKey string, rev int64, err error) {
	bad := func(msg string) error {
		return apierrors.NewBadRequest("continue key is not valid: " + msg)
	}
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, bad("the continue parameter is not correctly encoded")
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return "", 0, bad("the continue parameter is not correctly encoded")
	}
	if c.APIVersion != "meta.k8s.io/v1" {
		return "", 0, bad(fmt.Sprintf("unsupported version %q", c.APIVersion))
	}
	if c.StartKey == "" {
		return "", 0, bad("encoded start key empty")
	}
	// A token must not walk out of the list's prefix: as upstream, the key
	// must be a clean path below it. (Names such as RBAC's "a..b" hold ".."
	// without being a parent reference, and their pages must continue.)
	key := "/" + strings.TrimPrefix(c.StartKey, "/")
	if path.Clean(key) != key || key == "/" {
		return "", 0, bad("the encoded start key is not valid")
	}
	return prefix + key[1:], c.ResourceVersion, nil
}
