package serviceaccount_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/serviceaccount"
)

func TestDefaultServiceAccount(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	cs := c.Client

	// A namespace that is already Terminating when the controller starts
	// must never get an account.
	createNS(t, cs, "early-gone")
	if err := cs.CoreV1().Namespaces().Delete(ctx, "early-gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Run(t, c.Config, serviceaccount.Descriptor)

	t.Run("created in a new namespace", func(t *testing.T) {
		createNS(t, cs, "team-a")
		waitAccount(t, cs, "team-a", "")
	})

	t.Run("existing namespaces get one at start", func(t *testing.T) {
		waitAccount(t, cs, metav1.NamespaceDefault, "")
		waitAccount(t, cs, metav1.NamespaceSystem, "")
	})

	t.Run("recreated after delete", func(t *testing.T) {
		old := waitAccount(t, cs, "team-a", "")
		if err := cs.CoreV1().ServiceAccounts("team-a").Delete(ctx, serviceaccount.DefaultName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAccount(t, cs, "team-a", old.UID)
	})

	t.Run("none in a terminating namespace", func(t *testing.T) {
		createNS(t, cs, "team-b")
		createNS(t, cs, "team-c")
		waitAccount(t, cs, "team-b", "")
		cOld := waitAccount(t, cs, "team-c", "")
		if err := cs.CoreV1().Namespaces().Delete(ctx, "team-b", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Nothing else runs, so team-b stays Terminating; deleting inside
		// it is still allowed.
		if err := cs.CoreV1().ServiceAccounts("team-b").Delete(ctx, serviceaccount.DefaultName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// team-c is the control: once its account is back, the controller
		// has had time to act on team-b as well.
		if err := cs.CoreV1().ServiceAccounts("team-c").Delete(ctx, serviceaccount.DefaultName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAccount(t, cs, "team-c", cOld.UID)
		controllertest.Consistently(t, 300*time.Millisecond, func() (bool, string) {
			for _, ns := range []string{"team-b", "early-gone"} {
				if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, serviceaccount.DefaultName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false, fmt.Sprintf("%s: default service account: err=%v, want NotFound", ns, err)
				}
			}
			return true, ""
		})
	})
}

func createNS(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// waitAccount waits for the default account in ns whose UID differs from
// notUID, and returns it.
func waitAccount(t *testing.T, cs kubernetes.Interface, ns string, notUID types.UID) *corev1.ServiceAccount {
	t.Helper()
	var sa *corev1.ServiceAccount
	controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
		got, err := cs.CoreV1().ServiceAccounts(ns).Get(context.Background(), serviceaccount.DefaultName, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("%s/default: %v", ns, err)
		}
		if got.UID == notUID {
			return false, fmt.Sprintf("%s/default still the old one (uid %s)", ns, notUID)
		}
		sa = got
		return true, ""
	})
	return sa
}
